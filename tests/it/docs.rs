//! The docs name what exists: every `cargo test` command in README.md and docs/*.md runs a test
//! target that exists with a filter that selects tests (docs/mcp.md named `--test mcp`, which
//! does not exist), and docs/contract.md's CLI table names every command and every flag of
//! `answer`.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, with their text.
fn docs() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            paths.push(path);
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// Every `cargo test …` a text shows: the rest of the line in a fenced block, else the inline
/// code span (which may go on over a line break).
fn cargo_test_commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            if let Some(at) = line.find("cargo test") {
                found.push(line[at..].to_owned());
            }
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("`cargo test") {
        let span = &rest[at + 1..];
        let end = span.find('`').unwrap_or(span.len());
        found.push(span[..end].replace('\n', " "));
        rest = &span[end..];
    }
    found
}

/// Every test of the `it` binary as `module::name` (each `fn` of each tests/it file; a
/// directory `m/` is module `m`, its `mod.rs` is `m::…` and its `x.rs` is `m::x::…`).
fn it_tests() -> Vec<String> {
    let mut names = Vec::new();
    collect_tests(&root().join("tests/it"), "", &mut names);
    names
}

fn collect_tests(dir: &std::path::Path, prefix: &str, names: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            collect_tests(&path, &format!("{prefix}{stem}::"), names);
            continue;
        }
        let module = if stem == "mod" {
            prefix.trim_end_matches("::").to_string()
        } else {
            format!("{prefix}{stem}")
        };
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let line = line.trim_start();
            let Some(at) = line.find("fn ") else { continue };
            if !(line.starts_with("fn ") || line.starts_with("async fn ")) {
                continue;
            }
            let name: String = line[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(format!("{module}::{name}"));
        }
    }
}

#[test]
fn every_cargo_test_command_in_the_docs_names_a_real_target_and_tests() {
    let tests = it_tests();
    let mut checked = 0;
    for (path, text) in docs() {
        let doc = path.strip_prefix(root()).unwrap().display().to_string();
        for command in cargo_test_commands(&text) {
            let words: Vec<&str> = command.split_whitespace().collect();
            let Some(at) = words.iter().position(|w| *w == "--test") else {
                continue;
            };
            checked += 1;
            let target = words
                .get(at + 1)
                .unwrap_or_else(|| panic!("{doc}: `{command}` names no target"));
            let tests_dir = root().join("tests");
            assert!(
                tests_dir.join(format!("{target}.rs")).is_file()
                    || tests_dir.join(target).join("main.rs").is_file(),
                "{doc}: `{command}`: there is no test target {target:?} (the integration tests \
                 are one binary, `it`: `cargo test --test it -- module::`)"
            );
            // The filter: the first word after the target that is not a flag.
            let Some(filter) = words[at + 2..].iter().find(|w| !w.starts_with('-')) else {
                continue;
            };
            if *target != "it" {
                continue;
            }
            if let Some((module, _)) = filter.split_once("::") {
                assert!(
                    root().join(format!("tests/it/{module}.rs")).is_file()
                        || root().join(format!("tests/it/{module}/mod.rs")).is_file(),
                    "{doc}: `{command}`: tests/it has no module {module:?}"
                );
            }
            assert!(
                tests.iter().any(|t| t.contains(*filter)),
                "{doc}: `{command}`: the filter {filter:?} selects no test"
            );
        }
    }
    // The docs do show some: a parser that finds none would pass anything.
    assert!(checked >= 3, "only {checked} commands found");
}

/// The first cells of docs/contract.md's CLI table, and its `answer` row.
fn contract_cli_table() -> (Vec<String>, String) {
    let text = std::fs::read_to_string(root().join("docs/contract.md")).unwrap();
    let section = text.split("\n## CLI\n").nth(1).expect("a CLI section");
    let section = section.split("\n## ").next().unwrap();
    let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| `")).collect();
    let firsts = rows
        .iter()
        .map(|r| r.split(" | ").next().unwrap_or("").to_owned())
        .collect();
    let answer = rows
        .iter()
        .filter(|r| r.starts_with("| `answer"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    (firsts, answer)
}

#[test]
fn the_contract_names_every_command_and_every_answer_flag() {
    let (firsts, answer) = contract_cli_table();
    let cli = <askrelay::cli::Cli as clap::CommandFactory>::command();
    let mut paths = Vec::new();
    for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
        let nested: Vec<_> = sub
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if nested.is_empty() {
            paths.push(sub.get_name().to_owned());
        }
        for n in nested {
            paths.push(format!("{} {}", sub.get_name(), n.get_name()));
        }
    }
    for path in &paths {
        assert!(
            firsts.iter().any(|f| f.contains(&format!("`{path}"))),
            "docs/contract.md's CLI table has no row for `askrelay {path}`"
        );
    }
    let answer_cmd = cli.find_subcommand("answer").unwrap();
    for arg in answer_cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        assert!(
            answer.contains(&format!("--{long}")),
            "docs/contract.md's `answer` row lacks --{long}:\n{answer}"
        );
    }
}

/// The image must not make the socket's directory a volume of its own: an anonymous volume
/// would hold a socket no host agent can reach. The docs show the bind mount instead.
#[test]
fn the_container_bind_mounts_the_socket_directory() {
    let containerfile = std::fs::read_to_string(root().join("deploy/Containerfile")).unwrap();
    for line in containerfile.lines().filter(|l| l.starts_with("VOLUME")) {
        assert!(!line.contains("/run/askrelay"), "{line}");
    }
    assert!(containerfile.contains("-v /run/askrelay:/run/askrelay"));
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains("-v /run/askrelay:/run/askrelay"));
}
