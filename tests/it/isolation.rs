//! No test touches the developer's own daemon. On a desktop login `/run/user/$UID` exists and
//! `XDG_RUNTIME_DIR` names it: a test process that looked at the default places would ask the
//! developer's daemon, or take `/run/user/$UID/askrelay.sock` and leave it stale when killed.
//! Every `askrelay` process the tests start comes from `harness::askrelay_in`, whose every
//! default place is inside the test's own directory; these tests hold that.

use crate::harness::*;
use std::path::Path;

/// Every place in the tests that starts the `askrelay` binary goes through the harness. The
/// binary's path is only named in harness.rs, and in the two tests that hand it to the chaos
/// and benchmark harnesses (crates/testkit), which start it with an empty environment and an
/// explicit socket in their own temp dir (checked below too).
#[test]
fn every_askrelay_process_is_started_by_the_harness() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bypasses = Vec::new();
    for entry in std::fs::read_dir(root.join("tests/it")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".rs") || name == "harness.rs" || name == "isolation.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let names_binary = line.contains("CARGO_BIN_EXE_askrelay");
            let starts_it = line.contains("Command::new(BIN")
                || line.contains("Command::new(crate::harness::BIN");
            let handed_to_testkit = matches!(name.as_str(), "chaos.rs" | "bench_smoke.rs");
            if starts_it || (names_binary && !handed_to_testkit) {
                bypasses.push(format!("tests/it/{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        bypasses.is_empty(),
        "these start askrelay without harness::askrelay_in (whose default places are the \
         test's own):\n{}",
        bypasses.join("\n")
    );
    // The testkit's own starts clear the environment and name the socket: each harness is a
    // file, or a directory of files.
    for file in ["crates/testkit/src/chaos", "crates/testkit/src/bench"] {
        let text = module_text(&root.join(file));
        let starts = text.matches("Command::new(bin)").count()
            + text.matches("Command::new(&self.bin)").count();
        let cleared = text.matches(".env_clear()").count();
        let named = text.matches("\"ASKRELAY_SOCKET_PATH\"").count();
        assert!(
            starts > 0,
            "{file}: no start of the daemon found (the check is out of date)"
        );
        assert!(
            cleared >= starts && named >= starts,
            "{file}: {starts} starts of askrelay, {cleared} with an empty environment, {named} \
             naming the socket"
        );
    }
}

/// The text of the module at `path`: `path.rs`, or every `.rs` file in the directory `path`.
fn module_text(path: &Path) -> String {
    let file = path.with_extension("rs");
    if file.exists() {
        return std::fs::read_to_string(file).unwrap();
    }
    let mut text = String::new();
    for entry in std::fs::read_dir(path).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "rs") {
            text.push_str(&std::fs::read_to_string(p).unwrap());
        }
    }
    text
}

/// With no socket configured, a client and a daemon the harness starts resolve the default
/// socket inside the test's directory, never at `/run/user/$UID` or in the shared `/tmp`, even
/// on a machine where `/run/user/$UID` exists and this process has `XDG_RUNTIME_DIR`.
#[tokio::test]
async fn a_harness_process_resolves_its_socket_inside_its_directory() {
    let bin = Bin::new().without("ASKRELAY_SOCKET_PATH");
    let dir = bin.dir().to_path_buf();
    // A client with nothing listening names the places it looked at.
    let (code, _, err) = bin.run(&["pending"]).await;
    assert_ne!(code, 0, "{err}");
    let mut named = 0;
    for word in err.split(|c: char| c.is_whitespace() || "(),;:'\"".contains(c)) {
        if word.starts_with('/') && word.ends_with(".sock") {
            named += 1;
            assert!(
                Path::new(word).starts_with(&dir),
                "the client looked for a socket at {word}, outside the test's {}:\n{err}",
                dir.display()
            );
        }
    }
    assert!(named > 0, "the client named no socket: {err}");

    // A daemon takes the default socket inside the test's directory.
    let mut served = bin.serve().await;
    let line = served.wait_log_anywhere("listening").await;
    let path = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("path="))
        .unwrap_or_else(|| panic!("no path in {line}"))
        .trim_matches('"')
        .to_owned();
    assert!(
        Path::new(&path).starts_with(&dir),
        "the daemon listens at {path}, outside the test's {}",
        dir.display()
    );
    let (code, out, err) = bin.run(&["pending"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("No pending requests"), "{out}");
    served.terminate().await;
}
