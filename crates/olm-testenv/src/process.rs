//! One control plane component running as a child process with its own log file.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::Error;
use crate::logtail::LogTail;
use crate::sys::{Signal, Target, send_signal};

/// A running component. Stopped (with its whole process group) by [`Component::stop`] or on drop.
#[derive(Debug)]
pub(crate) struct Component {
    name: &'static str,
    child: Child,
    log: PathBuf,
    exited: Option<ExitStatus>,
    /// How it was started, to start it again after [`Component::kill`].
    program: PathBuf,
    args: Vec<String>,
    envs: Vec<(String, PathBuf)>,
}

impl Component {
    /// Starts `program` with `args`, stdout and stderr appended to `log`.
    ///
    /// The child gets its own process group so that stopping it also stops anything it spawned, and
    /// asks the kernel to kill it when the thread that started it dies: a test binary killed by a
    /// timeout or Ctrl-C must not leave an apiserver eating memory behind.
    pub(crate) fn spawn(
        name: &'static str,
        program: &Path,
        args: &[String],
        envs: &[(&str, &Path)],
        log: PathBuf,
    ) -> Result<Component, Error> {
        let envs: Vec<(String, PathBuf)> = envs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.to_path_buf()))
            .collect();
        let child = start(name, program, args, &envs, &log, false)?;
        Ok(Component {
            name,
            child,
            log,
            exited: None,
            program: program.to_owned(),
            args: args.to_vec(),
            envs,
        })
    }

    /// Kills the process group at once (SIGKILL: a crash, not a shutdown) and reaps it.
    pub(crate) fn kill(&mut self) {
        signal_group(self.child.id(), Signal::KILL);
        if self.exited.is_none() {
            self.exited = self.child.wait().ok();
        }
    }

    /// Starts the component again as it was first started, its output appended to its log.
    pub(crate) fn restart(&mut self) -> Result<(), Error> {
        self.kill();
        self.child = start(
            self.name,
            &self.program,
            &self.args,
            &self.envs,
            &self.log,
            true,
        )?;
        self.exited = None;
        Ok(())
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn log_path(&self) -> &Path {
        &self.log
    }

    /// The exit status if the process has ended (without blocking).
    pub(crate) fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// The last `lines` lines of the component's log.
    pub(crate) fn tail(&self, lines: usize) -> String {
        LogTail::read(&self.log, lines).text()
    }

    /// Sends SIGTERM to the process group, waits up to `grace` for the leader to exit, then sends
    /// SIGKILL to the group. Errors are ignored: the process may already be gone.
    pub(crate) fn stop(&mut self, grace: Duration) {
        let pgid = self.child.id();
        if self.exit_status().is_none() {
            signal_group(pgid, Signal::TERM);
            let deadline = Instant::now() + grace;
            while self.exit_status().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // Also reaps grandchildren that ignored SIGTERM; harmless when the group is empty.
        signal_group(pgid, Signal::KILL);
        if self.exited.is_none() {
            self.exited = self.child.wait().ok();
        }
    }
}

/// Starts `program` with `args` in a process group of its own, output to `log` (appended or
/// from scratch), dying with the thread that started it.
fn start(
    name: &'static str,
    program: &Path,
    args: &[String],
    envs: &[(String, PathBuf)],
    log: &Path,
    append: bool,
) -> Result<Child, Error> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(log)
        .map_err(|source| Error::io(format!("creating {}", log.display()), source))?;
    let err = out
        .try_clone()
        .map_err(|source| Error::io(format!("opening {}", log.display()), source))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    for (key, value) in envs {
        cmd.env(key, value);
    }
    // PR_SET_PDEATHSIG(SIGKILL) set in the child between fork and exec, which needs unsafe
    // code of its own; the workspace forbids that, so a crate that does only this does it.
    ur_taking_me_with_you::spawn_dying_with_parent(cmd)
        .map_err(|source| Error::io(format!("starting {name} ({})", program.display()), source))
}

impl Drop for Component {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

/// Best effort: the group may already be gone, and there is nothing more to do if it is not.
fn signal_group(pgid: u32, signal: Signal) {
    let _ = send_signal(Target::Group(pgid), signal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_kills_the_whole_group() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pidfile = dir.path().join("grandchild.pid");
        let script = format!(
            "sleep 300 & echo $! > {}; trap '' TERM; wait",
            pidfile.display()
        );
        let mut c = Component::spawn(
            "sh",
            Path::new("/bin/sh"),
            &["-c".to_owned(), script],
            &[],
            dir.path().join("sh.log"),
        )
        .expect("spawn");
        let deadline = Instant::now() + Duration::from_secs(5);
        while !pidfile.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let grandchild: u32 = std::fs::read_to_string(&pidfile)
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid");
        c.stop(Duration::from_millis(200));
        assert!(c.exit_status().is_some());
        std::thread::sleep(Duration::from_millis(100));
        // The grandchild was in the same group, so it is gone too: no /proc entry once init has
        // reaped it, or a zombie until then.
        let alive = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        assert!(!alive, "grandchild {grandchild} survived");
    }
}
