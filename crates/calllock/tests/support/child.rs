//! A `calllock` process driven over its stdio, paced by what it prints
//! rather than by sleeps: [`Running`] collects stdout and stderr on
//! threads as they come, and a test waits for the output it needs
//! ([`Running::wait_for`]; for `calllock chat`, [`Running::say`] types a
//! caller line and waits for the agent's answer).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a child may take to print what a test waits for. Nothing the
/// tests wait on needs more than a few seconds of the configured timers
/// (at most the safety script's quiet wait, 4 s, or the hang-up ceiling,
/// 10 s); the rest is room for a busy machine.
pub const PATIENCE: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Streams {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// Streams that reached their end (2: the process closed both).
    closed: usize,
}

#[derive(Default)]
struct Shared {
    streams: Mutex<Streams>,
    /// Signalled whenever a stream grows or closes.
    changed: Condvar,
}

/// A spawned child, its stdin open, its output collected as it comes.
pub struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    shared: Arc<Shared>,
    readers: Vec<JoinHandle<()>>,
    /// How much of stdout [`Running::say`] has already matched.
    answered: usize,
}

impl Running {
    /// Spawn `cmd` with all three stdio streams piped.
    pub fn spawn(cmd: &mut Command) -> Running {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("calllock starts");
        let shared = Arc::new(Shared::default());
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let readers = vec![
            collect(stdout, shared.clone(), |s| &mut s.stdout),
            collect(stderr, shared.clone(), |s| &mut s.stderr),
        ];
        Running {
            stdin: child.stdin.take(),
            child,
            shared,
            readers,
            answered: 0,
        }
    }

    /// Stdout so far.
    pub fn stdout(&self) -> String {
        text(&self.shared.streams.lock().unwrap().stdout)
    }

    /// Type `line` (and Enter) on the child's stdin.
    pub fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").expect("the child reads its stdin");
    }

    /// Wait until `done(stdout so far)`. Panics with everything the child
    /// printed if that takes longer than [`PATIENCE`] or the child closes
    /// its output first.
    pub fn wait_for(&self, what: &str, mut done: impl FnMut(&str) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        let mut s = self.shared.streams.lock().unwrap();
        loop {
            if done(&text(&s.stdout)) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                s.closed < 2 && !left.is_zero(),
                "{} waiting for {what}\n--- stdout:\n{}\n--- stderr:\n{}",
                if s.closed < 2 {
                    format!("gave up after {PATIENCE:?}")
                } else {
                    "the process closed its output".into()
                },
                text(&s.stdout),
                text(&s.stderr)
            );
            s = self.shared.changed.wait_timeout(s, left).unwrap().0;
        }
    }

    /// `calllock chat`: type `line` as the caller, then wait until the
    /// agent has answered it — chat echoes the line (`Caller: …`) and
    /// prints the agent's reply (`Agent [state]: …`) or the hang-up. A
    /// filler ("one moment while I check") is not the answer: the reply
    /// follows it. An empty line is a breath: chat echoes nothing and the
    /// agent says nothing, so there is nothing to wait for.
    pub fn say(&mut self, line: &str) {
        self.type_line(line);
        if line.trim().is_empty() {
            return;
        }
        let from = self.answered;
        let mut answered = None;
        self.wait_for(&format!("the agent's answer to {line:?}"), |out| {
            answered = chat_answer(&out[from..], line).map(|n| from + n);
            answered.is_some()
        });
        self.answered = answered.unwrap();
    }

    /// Ctrl-D: close stdin, then wait for the child to exit.
    pub fn hang_up(mut self) -> Output {
        drop(self.stdin.take());
        self.finish()
    }

    /// `kill -9`, then reap the child.
    pub fn kill(mut self) -> Output {
        self.child.kill().expect("kill the child");
        self.finish()
    }

    /// The child's exit status and all its output, once it has closed its
    /// output (within [`PATIENCE`]).
    fn finish(&mut self) -> Output {
        self.wait_until_closed();
        let status = self.child.wait().expect("reap the child");
        for r in self.readers.drain(..) {
            r.join().expect("an output reader");
        }
        let s = self.shared.streams.lock().unwrap();
        Output {
            status,
            stdout: s.stdout.clone(),
            stderr: s.stderr.clone(),
        }
    }

    fn wait_until_closed(&self) {
        let deadline = Instant::now() + PATIENCE;
        let mut s = self.shared.streams.lock().unwrap();
        while s.closed < 2 {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the process did not exit within {PATIENCE:?}\n--- stdout:\n{}\n--- stderr:\n{}",
                text(&s.stdout),
                text(&s.stderr)
            );
            s = self.shared.changed.wait_timeout(s, left).unwrap().0;
        }
    }
}

impl Drop for Running {
    /// A test that failed midway leaves no process behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A thread that appends what `from` yields to one of the streams.
fn collect(
    mut from: impl Read + Send + 'static,
    shared: Arc<Shared>,
    stream: fn(&mut Streams) -> &mut Vec<u8>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            let n = from.read(&mut buf).unwrap_or(0);
            let mut s = shared.streams.lock().unwrap();
            if n == 0 {
                s.closed += 1;
            } else {
                stream(&mut s).extend_from_slice(&buf[..n]);
            }
            shared.changed.notify_all();
            if n == 0 {
                return;
            }
        }
    })
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// In chat's stdout `out`: the end of the agent's answer to the caller
/// line `line` (the line that answers it: the first agent line after its
/// echo that is not a filler, or the hang-up), if printed yet.
fn chat_answer(out: &str, line: &str) -> Option<usize> {
    let echo = format!(" Caller: {line}");
    let mut heard = false;
    let mut end = 0;
    for l in out.split_inclusive('\n') {
        if !l.ends_with('\n') {
            return None; // still being written
        }
        end += l.len();
        let l = l.trim_end();
        if !heard {
            heard = l.ends_with(&echo);
        } else if (l.contains(" Agent [") && !l.contains("(filler:")) || l.ends_with(" hung up") {
            return Some(end);
        }
    }
    None
}

/// `out` has a whole line (ended: the agent stopped speaking it, for the
/// phone of `calllock voice`) containing `part`.
pub fn has_whole_line(out: &str, part: &str) -> bool {
    out.split_inclusive('\n')
        .any(|l| l.ends_with('\n') && l.contains(part))
}
