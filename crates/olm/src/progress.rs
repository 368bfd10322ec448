//! A spinner for long loads, shown only to a person watching: on a terminal, and only once the
//! work has taken longer than a moment, so scripts, pipes and quick commands never see it.

use std::io::IsTerminal;
use std::sync::mpsc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// How long work runs before the spinner appears.
const GRACE: Duration = Duration::from_millis(700);

/// Runs `work`, showing `label` with a spinner on stderr if it takes longer than [`GRACE`].
pub fn spin<T>(label: &str, work: impl FnOnce() -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return work();
    }
    let (done, wait) = mpsc::channel::<()>();
    let label = label.to_owned();
    let spinner = std::thread::spawn(move || {
        if wait.recv_timeout(GRACE).is_ok() {
            return;
        }
        let bar = ProgressBar::new_spinner().with_message(label);
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(100));
        let _ = wait.recv();
        bar.finish_and_clear();
    });
    let out = work();
    let _ = done.send(());
    let _ = spinner.join();
    out
}
