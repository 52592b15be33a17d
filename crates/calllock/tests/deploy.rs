//! The deployment files agree with the program: `fly.toml` and the
//! `Dockerfile` point at the port `serve` listens on and the health check it
//! answers, give the graceful drain its time, run as a non-root user (the
//! entrypoint hands a root-owned volume to that user first), and build
//! from registries only; `calllock health` is the container's check.
//! `docker build` itself runs where a Docker engine answers (SKIP, with
//! the reason, where none does — Docker is optional, as the issue says).

use calllock::config::Config;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dockerfile() -> String {
    std::fs::read_to_string(repo().join("Dockerfile")).unwrap()
}

/// The runtime stage: everything after the last `FROM`.
fn runtime_stage(d: &str) -> &str {
    let at = d.rfind("\nFROM ").expect("a FROM");
    &d[at..]
}

#[test]
fn fly_toml_points_at_the_real_port_and_health_check() {
    let text = std::fs::read_to_string(repo().join("fly.toml")).unwrap();
    let fly: toml::Value = toml::from_str(&text).unwrap();
    let defaults = Config::default();
    let port = i64::from(defaults.serve.port);
    let http = &fly["http_service"];
    assert_eq!(http["internal_port"].as_integer(), Some(port));
    assert_eq!(fly["env"]["PORT"].as_str(), Some(port.to_string().as_str()));
    let check = &http["checks"].as_array().unwrap()[0];
    assert_eq!(check["path"].as_str(), Some("/health"));
    assert_eq!(check["method"].as_str(), Some("GET"));
    // A stopped machine cannot answer a call.
    assert_eq!(http["auto_stop_machines"].as_str(), Some("off"));
    assert!(http["min_machines_running"].as_integer().unwrap() >= 1);
    // The drain (grace for live calls, the goodbye, the records) fits in
    // the kill timeout, which Fly caps at 300 s.
    assert_eq!(fly["kill_signal"].as_str(), Some("SIGTERM"));
    let kill = fly["kill_timeout"].as_integer().unwrap() as f64;
    let drain = defaults.serve.shutdown_grace_s + defaults.twilio.hangup_wait_s + 30.0;
    assert!(
        (drain..=300.0).contains(&kill),
        "kill_timeout {kill} vs drain {drain}"
    );
    // The database lives on the volume.
    let d = dockerfile();
    let mount = fly["mounts"]["destination"].as_str().unwrap();
    assert!(
        d.contains(&format!("CALLLOCK_DATABASE={mount}/")),
        "the database is not on the volume {mount}"
    );
    assert_eq!(
        fly["build"]["dockerfile"].as_str(),
        Some("Dockerfile"),
        "fly builds the Dockerfile"
    );
}

#[test]
fn the_dockerfile_runs_serve_as_a_non_root_user_with_a_health_check() {
    let d = dockerfile();
    let port = Config::default().serve.port;
    assert!(d.matches("\nFROM ").count() >= 2, "multi-stage");
    let run = runtime_stage(&d);
    assert!(
        run.contains("debian:bookworm-slim"),
        "a small runtime image"
    );
    assert!(!run.contains("cargo "), "no toolchain at run time");
    assert!(run.contains(&format!("EXPOSE {port}")));
    assert!(run.contains(&format!("PORT={port}")));
    // Started as root only to hand the volume to `calllock`; the
    // entrypoint then drops to it (a_root_owned_volume_is_handed_…).
    assert!(run.contains("useradd --system --uid 10001"));
    assert!(run.contains("COPY scripts/docker-entrypoint /usr/local/bin/docker-entrypoint"));
    assert!(run.contains(r#"ENTRYPOINT ["docker-entrypoint"]"#));
    assert!(!run.contains("\nUSER root"));
    assert!(run.contains(r#"HEALTHCHECK"#) && run.contains(r#"CMD ["calllock", "health"]"#));
    assert!(run.contains(r#"CMD ["calllock", "serve", "--bind", "0.0.0.0"]"#));
    // The Flite libraries the binary links (libflite1) are installed.
    assert!(run.contains("libflite1"));
    // Registries only: nothing fetched by URL.
    for tool in ["curl ", "wget ", "ADD http"] {
        assert!(!d.contains(tool), "the Dockerfile downloads with {tool:?}");
    }
    // Portable whisper.cpp (not -march=native of the builder).
    assert!(d.contains("GGML_NATIVE=OFF"));
    // The build stage installs local speech with the repository's script.
    assert!(d.contains("scripts/setup-local-speech"));
    assert!(d.contains("--features local-speech"));
}

#[test]
fn calllock_health_fails_clearly_when_nothing_answers() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = Command::new(env!("CARGO_BIN_EXE_calllock"))
        .args(["health", "--url", &format!("http://127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/health: no answer"), "{err}");
}

#[test]
fn docker_build_works_where_docker_runs() {
    let engine = Command::new("docker").arg("info").output();
    let why = match &engine {
        Err(e) => Some(format!("no docker command ({e})")),
        Ok(o) if !o.status.success() => Some(format!(
            "no Docker engine answers: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Ok(_) => None,
    };
    if let Some(why) = why {
        // Allowed under CI too: this machine kind has no Docker engine.
        eprintln!("SKIP docker_build_works_where_docker_runs: {why}");
        return;
    }
    let out = Command::new("docker")
        .args(["build", "--quiet", "-t", "calllock-test", "."])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 22, finding 9: a fresh Fly volume is mounted owned by root, and
/// the server (a non-root user) could not create its database on it. The
/// image's entrypoint, started as root, hands the folder to the user and
/// runs the command as that user. Here with `nobody` standing in for
/// `calllock` (this machine has no such user).
#[test]
fn a_root_owned_volume_is_handed_to_the_server_user() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // Who we are: `id -u`.
    let me = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&me.stdout).trim() != "0" {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root and must run this test"
        );
        eprintln!("SKIP a_root_owned_volume_is_handed_to_the_server_user: not root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // /var/lib in the image: others may pass through it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let volume = dir.path().join("volume");
    std::fs::create_dir(&volume).unwrap();
    assert_eq!(
        std::fs::metadata(&volume).unwrap().uid(),
        0,
        "root-owned, as Fly mounts it"
    );
    let run = |script: &str| {
        Command::new(repo().join("scripts/docker-entrypoint"))
            .args(["sh", "-c", script])
            .env("CALLLOCK_USER", "nobody")
            .env("CALLLOCK_DATA_DIR", &volume)
            .output()
            .unwrap()
    };
    // What the server does at its first start: create its database file.
    let out = run(r#"id -u && echo db > "$CALLLOCK_DATA_DIR/calllock.db""#);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nobody = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_ne!(nobody, "0", "the command does not run as root");
    let uid: u32 = nobody.parse().unwrap();
    assert_eq!(std::fs::metadata(&volume).unwrap().uid(), uid);
    assert_eq!(
        std::fs::metadata(volume.join("calllock.db")).unwrap().uid(),
        uid
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("giving"));
    // A command run as root in the container (`fly ssh console -C
    // "calllock doctor"`) left a folder behind: the next start hands it
    // over too.
    std::fs::create_dir(volume.join("recordings")).unwrap();
    let out = run("true");
    assert!(out.status.success());
    assert_eq!(
        std::fs::metadata(volume.join("recordings")).unwrap().uid(),
        uid
    );
    // A start that finds everything theirs already says nothing.
    let out = run("true");
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `deploy/`'s example of several instances: the balancer checks the
/// health path the server answers (503 while draining takes an instance
/// out), keeps a call's WebSocket open as long as a call may last, sends
/// to every instance the compose file starts, on the port they listen
/// on; every instance has its own name on the one PostgreSQL database,
/// and gets the time its graceful drain needs. (The configuration itself
/// is checked by HAProxy in `tests/scale_out.rs`, which runs with it.)
#[test]
fn the_scale_out_example_points_the_balancer_at_every_instance() {
    let haproxy = std::fs::read_to_string(repo().join("deploy/haproxy.cfg")).unwrap();
    let compose = std::fs::read_to_string(repo().join("deploy/compose.yaml")).unwrap();
    let lines: Vec<&str> = haproxy
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    let has = |l: &str| lines.contains(&l);
    assert!(has("option httpchk GET /health"), "{lines:?}");
    assert!(
        has("http-check expect status 200"),
        "draining (503) must take an instance out"
    );
    assert!(
        has("option redispatch"),
        "a dead instance's new calls go elsewhere"
    );
    let tunnel = lines
        .iter()
        .find_map(|l| l.strip_prefix("timeout tunnel "))
        .expect("timeout tunnel (a call's WebSocket)");
    let secs = match tunnel.trim() {
        t if t.ends_with('h') => t.trim_end_matches('h').parse::<u64>().unwrap() * 3600,
        t if t.ends_with('m') => t.trim_end_matches('m').parse::<u64>().unwrap() * 60,
        t => t.trim_end_matches('s').parse::<u64>().unwrap(),
    };
    assert!(
        secs >= 3600,
        "a call may last an hour: timeout tunnel {tunnel}"
    );

    let port = Config::default().serve.port;
    let servers: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("server "))
        .collect();
    assert!(servers.len() >= 2, "{servers:?}");
    let mut names = Vec::new();
    for s in &servers {
        let mut parts = s.split_whitespace();
        let (name, addr) = (parts.next().unwrap(), parts.next().unwrap());
        let (host, p) = addr.rsplit_once(':').unwrap();
        assert_eq!(p.parse::<u16>().unwrap(), port, "{s}");
        assert_eq!(host, name);
        assert!(
            compose.contains(&format!("\n  {host}:\n")),
            "the balancer's {host} is not a service of compose.yaml"
        );
        assert!(
            compose.contains(&format!("CALLLOCK_INSTANCE: {host}\n")),
            "{host} has no instance name of its own"
        );
        names.push(host);
    }
    let services = compose
        .lines()
        .filter(|l| l.starts_with("  calllock-") && l.ends_with(':'))
        .count();
    assert_eq!(
        services,
        servers.len(),
        "every instance is behind the balancer"
    );
    let bind = lines
        .iter()
        .find_map(|l| l.strip_prefix("bind :"))
        .expect("bind :PORT");
    assert!(
        compose.contains(&format!("\"{bind}:{bind}\"")),
        "the balancer's port {bind} is published"
    );
    // One database for all: the shared environment names PostgreSQL.
    let db: Vec<&str> = compose
        .lines()
        .filter_map(|l| l.trim().strip_prefix("CALLLOCK_DATABASE: "))
        .collect();
    assert_eq!(db.len(), 1, "one database line, shared: {db:?}");
    assert!(db[0].starts_with("postgres://"), "{db:?}");
    // The drain fits in the stop grace period.
    let defaults = Config::default();
    let drain = defaults.serve.shutdown_grace_s + defaults.twilio.hangup_wait_s + 5.0;
    let grace = compose
        .lines()
        .find_map(|l| l.trim().strip_prefix("stop_grace_period: "))
        .expect("stop_grace_period")
        .trim_end_matches('s')
        .parse::<f64>()
        .unwrap();
    assert!(
        grace >= drain,
        "stop_grace_period {grace} s < drain {drain} s"
    );
}
