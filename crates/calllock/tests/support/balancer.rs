//! A real load balancer in front of `calllock serve` instances: Debian's
//! HAProxy (`scripts/setup-balancer`) run in the foreground with the
//! project's own `deploy/haproxy.cfg`, its `bind` and `server` lines
//! pointed at this machine's ports and nothing else changed — so what is
//! tested is the configuration an operator deploys.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The HAProxy binary, when installed.
pub fn haproxy() -> Option<PathBuf> {
    [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// Why the balancer cannot run here, if it cannot.
pub fn missing() -> Option<String> {
    haproxy()
        .is_none()
        .then(|| "HAProxy is not installed (run scripts/setup-balancer)".to_string())
}

/// The committed configuration.
pub fn deployed_config() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/haproxy.cfg");
    std::fs::read_to_string(path).expect("deploy/haproxy.cfg")
}

/// `deploy/haproxy.cfg` listening on `port` (loopback) with one `server`
/// line per address, in order (`calllock-1`, `calllock-2`, …).
pub fn config_for(port: u16, servers: &[SocketAddr]) -> String {
    let mut out = String::new();
    let mut servers_written = false;
    for line in deployed_config().lines() {
        let t = line.trim_start();
        if t.starts_with("bind ") {
            out.push_str(&format!("    bind 127.0.0.1:{port}\n"));
        } else if t.starts_with("server ") {
            if !servers_written {
                for (i, a) in servers.iter().enumerate() {
                    out.push_str(&format!("    server calllock-{} {a}\n", i + 1));
                }
                servers_written = true;
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(servers_written, "deploy/haproxy.cfg has no server line");
    out
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// HAProxy running in the foreground; stopped when dropped.
pub struct Balancer {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub config: PathBuf,
}

impl Balancer {
    /// Start HAProxy for `servers`, its configuration and log in `dir`,
    /// and wait until it accepts connections.
    pub fn start(dir: &Path, servers: &[SocketAddr]) -> Balancer {
        let bin = haproxy().expect("haproxy (see balancer::missing)");
        let port = free_port();
        let config = dir.join("haproxy.cfg");
        std::fs::write(&config, config_for(port, servers)).expect("write haproxy.cfg");
        let check = Command::new(&bin)
            .arg("-c")
            .arg("-f")
            .arg(&config)
            .output()
            .expect("run haproxy -c");
        assert!(
            check.status.success(),
            "deploy/haproxy.cfg does not check: {}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let log = std::fs::File::create(dir.join("haproxy.log")).expect("haproxy log");
        let child = Command::new(&bin)
            .arg("-db") // foreground, no daemon
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start haproxy");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "haproxy never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Balancer {
            child,
            url: format!("http://127.0.0.1:{port}"),
            config,
        }
    }

    /// What HAProxy logged (its alerts and warnings).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.config.with_file_name("haproxy.log")).unwrap_or_default()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
