//! A real browser for tests of web pages: Debian's `chromium`, headless, driven over the W3C
//! WebDriver protocol through `chromedriver` (both installed by `scripts/setup.sh`). The client
//! is the few WebDriver commands the tests use, spoken over a plain loopback HTTP/1.1
//! connection: open a page, run a script in it, click, hover, pick an option, take a screenshot,
//! and emulate a colour scheme through chromedriver's DevTools passthrough.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// The Debian packages the browser tests need.
pub const BROWSER_APT_PACKAGES: &str = "chromium chromium-driver";

/// What can go wrong driving the browser.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// `chromedriver` or `chromium` is not installed.
    #[error(
        "{0} not found: install the Debian packages {BROWSER_APT_PACKAGES} (scripts/setup.sh does)"
    )]
    Missing(&'static str),
    /// Talking to chromedriver failed.
    #[error("webdriver: {0}")]
    Io(#[from] io::Error),
    /// chromedriver answered with an error.
    #[error("webdriver {command}: {message}")]
    Command {
        /// The command sent.
        command: String,
        /// What chromedriver said.
        message: String,
    },
}

/// A headless chromium session; ended (and chromedriver stopped) on drop.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

const CHROMIUM: &str = "/usr/bin/chromium";

impl Browser {
    /// Starts chromedriver and a headless chromium of `width`×`height`.
    pub fn start(width: u32, height: u32) -> Result<Browser, BrowserError> {
        if !Path::new(CHROMIUM).exists() {
            return Err(BrowserError::Missing("chromium"));
        }
        let port = crate::sys::free_ports::<1>()?[0];
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                if e.kind() == io::ErrorKind::NotFound {
                    BrowserError::Missing("chromedriver")
                } else {
                    BrowserError::Io(e)
                }
            })?;
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(BrowserError::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "chromedriver did not start listening within 20 s",
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", format!("--window-size={width},{height}")]}}}});
        let answer = browser.call("POST", "/session", &caps)?;
        browser.session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if browser.session.is_empty() {
            return Err(BrowserError::Command {
                command: "POST /session".into(),
                message: format!("no session id in {answer}"),
            });
        }
        // A headless window need not hold the system's focus (it does not on a busy or
        // display-less machine), and then `focus()` moves the active element without firing
        // focus events. Pages are tested as a user sees them: focused.
        browser.cdp(
            "Emulation.setFocusEmulationEnabled",
            json!({"enabled": true}),
        )?;
        Ok(browser)
    }

    /// Opens `url` and waits for it to load.
    pub fn goto(&mut self, url: &str) -> Result<(), BrowserError> {
        self.session_call("POST", "/url", &json!({"url": url}))
            .map(drop)
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub fn eval(&mut self, script: &str, args: &[Value]) -> Result<Value, BrowserError> {
        self.session_call(
            "POST",
            "/execute/sync",
            &json!({"script": script, "args": args}),
        )
    }

    fn element(&mut self, css: &str) -> Result<Value, BrowserError> {
        self.session_call(
            "POST",
            "/element",
            &json!({"using": "css selector", "value": css}),
        )
    }

    /// Clicks the first element `css` selects.
    pub fn click(&mut self, css: &str) -> Result<(), BrowserError> {
        let id = element_id(&self.element(css)?);
        self.session_call("POST", &format!("/element/{id}/click"), &json!({}))
            .map(drop)
    }

    /// Moves the mouse over the first element `css` selects.
    pub fn hover(&mut self, css: &str) -> Result<(), BrowserError> {
        let element = self.element(css)?;
        let origin = json!({"element-6066-11e4-a52e-4f735466cecf": element_id(&element)});
        let actions = json!({"actions": [{"type": "pointer", "id": "mouse",
            "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "duration": 0, "origin": origin, "x": 0, "y": 0}]}]});
        self.session_call("POST", "/actions", &actions).map(drop)
    }

    /// Types `text` into the first element `css` selects (after clearing it).
    pub fn type_into(&mut self, css: &str, text: &str) -> Result<(), BrowserError> {
        let id = element_id(&self.element(css)?);
        self.session_call("POST", &format!("/element/{id}/clear"), &json!({}))?;
        self.session_call(
            "POST",
            &format!("/element/{id}/value"),
            &json!({"text": text}),
        )
        .map(drop)
    }

    /// Saves a PNG screenshot of the viewport.
    pub fn screenshot(&mut self, path: &Path) -> Result<(), BrowserError> {
        let png = self.session_call("GET", "/screenshot", &Value::Null)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or_default())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        std::fs::write(path, bytes)?;
        Ok(())
    }

    /// Emulates `prefers-color-scheme: dark` (or light).
    pub fn dark(&mut self, dark: bool) -> Result<(), BrowserError> {
        let scheme = if dark { "dark" } else { "light" };
        self.cdp(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        )
    }

    /// One DevTools protocol command through chromedriver.
    fn cdp(&mut self, cmd: &str, params: Value) -> Result<(), BrowserError> {
        self.session_call(
            "POST",
            "/goog/cdp/execute",
            &json!({"cmd": cmd, "params": params}),
        )
        .map(drop)
    }

    fn session_call(
        &mut self,
        method: &str,
        path: &str,
        body: &Value,
    ) -> Result<Value, BrowserError> {
        let path = format!("/session/{}{path}", self.session);
        Ok(self.call(method, &path, body)?["value"].take())
    }

    /// One WebDriver request; the answer's JSON.
    fn call(&mut self, method: &str, path: &str, body: &Value) -> Result<Value, BrowserError> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        let payload = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
            self.port,
            payload.len()
        )?;
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status)?;
        let mut length: Option<usize> = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 || line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().ok();
            }
        }
        let mut bytes = Vec::new();
        match length {
            Some(n) => {
                bytes.resize(n, 0);
                reader.read_exact(&mut bytes)?;
            }
            None => {
                reader.read_to_end(&mut bytes)?;
            }
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if !status.contains(" 200 ") {
            return Err(BrowserError::Command {
                command: format!("{method} {path}"),
                message: answer["value"]["message"]
                    .as_str()
                    .map_or_else(|| answer.to_string(), str::to_owned),
            });
        }
        Ok(answer)
    }
}

fn element_id(element: &Value) -> String {
    element["element-6066-11e4-a52e-4f735466cecf"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = self.call("DELETE", &path, &Value::Null);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
