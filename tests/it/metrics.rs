//! `/metrics` from the first second: a live daemon's first scrape, before any ask, has every
//! series with its `# HELP` and `# TYPE` in both formats; docs/operations.md lists exactly the
//! series it serves; and every query of the Grafana dashboard in `deploy/` names only series
//! of that first scrape. (The counts after a known sequence are `ops::metrics_count_…`.)

use crate::harness::*;
use crate::ops::{http_base, with_http};
use askrelay::config::{Config, Route};
use askrelay::daemon::DaemonHooks;
use askrelay_testkit::scratch::ScratchDb;
use askrelay_testkit::standin::StandIn;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A route besides the default one, on its own channel.
const OPS_CHANNEL: u64 = 777;

/// Discord with the default route and `ops`, the terminal too, and `/metrics` on.
fn everything(c: &mut Config) {
    with_http(c);
    c.terminal.enabled = Some(true);
    let mut r = Route::new("ops", OPS_CHANNEL);
    r.matches.insert("project".into(), "ops".into());
    c.routes.push(r);
}

/// One sample line: `name{label="value",…} value`.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// One metric family of a scrape, as its `# TYPE` line names it.
#[derive(Debug, Default)]
struct Family {
    help: Option<String>,
    kind: Option<String>,
    samples: Vec<Sample>,
}

/// The suffixes a sample may add to its family's name.
const SUFFIXES: [&str; 6] = ["", "_total", "_bucket", "_sum", "_count", "_created"];

/// Parses a scrape (either format), checking that each sample belongs to the family whose
/// `# HELP`/`# TYPE` came last.
fn parse(text: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines().filter(|l| !l.is_empty()) {
        if line == "# EOF" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            families.entry(name.to_owned()).or_default().help = Some(help.to_owned());
            current = Some(name.to_owned());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("a TYPE line names a type");
            families.entry(name.to_owned()).or_default().kind = Some(kind.to_owned());
            current = Some(name.to_owned());
            continue;
        }
        assert!(!line.starts_with('#'), "an unexpected comment: {line}");
        let sample = parse_sample(line);
        let family = current
            .as_deref()
            .unwrap_or_else(|| panic!("a sample before any family: {line}"));
        // The classic format names a counter's family by its `_total` sample.
        let base = family.strip_suffix("_total").unwrap_or(family);
        assert!(
            SUFFIXES.iter().any(|s| sample.name == format!("{base}{s}")),
            "{} is not a sample of {family}",
            sample.name
        );
        families.get_mut(family).unwrap().samples.push(sample);
    }
    families
}

fn parse_sample(line: &str) -> Sample {
    let (series, value) = line
        .rsplit_once(' ')
        .unwrap_or_else(|| panic!("not a sample: {line}"));
    let value = value
        .parse()
        .unwrap_or_else(|e| panic!("{e}: the value of {line}"));
    let Some((name, labels)) = series.split_once('{') else {
        return Sample {
            name: series.to_owned(),
            labels: BTreeMap::new(),
            value,
        };
    };
    let body = labels
        .strip_suffix('}')
        .unwrap_or_else(|| panic!("unclosed labels: {line}"));
    let mut labels = BTreeMap::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").expect("label=\"value\"");
        // The value runs to the first quote that no backslash escapes.
        let mut end = None;
        let mut escaped = false;
        for (i, c) in after.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        let end = end.unwrap_or_else(|| panic!("an unterminated label value: {line}"));
        labels.insert(key.to_owned(), after[..end].to_owned());
        rest = after[end + 1..]
            .strip_prefix(',')
            .unwrap_or(&after[end + 1..]);
    }
    Sample {
        name: name.to_owned(),
        labels,
        value,
    }
}

/// The sample of `families` named `name` with exactly `labels`.
fn find<'a>(
    families: &'a BTreeMap<String, Family>,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<&'a Sample> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    families
        .values()
        .flat_map(|f| &f.samples)
        .find(|s| s.name == name && s.labels == want)
}

/// A scrape with this `Accept` (none: the classic format), its content type checked.
async fn scrape(app: &App, openmetrics: bool) -> String {
    let mut req = reqwest::Client::new().get(format!("{}/metrics", http_base(app)));
    if openmetrics {
        req = req.header("accept", "application/openmetrics-text;version=1.0.0");
    }
    let resp = within("GET /metrics", req.send()).await.unwrap();
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    let body = resp.text().await.unwrap();
    if openmetrics {
        assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
        assert!(body.ends_with("# EOF\n"), "{body}");
    } else {
        assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    }
    body
}

#[tokio::test]
async fn every_series_is_in_the_first_scrape_with_help_and_type_in_both_formats() {
    let app = App::discord_with(everything).await;
    // Before any ask.
    let om = parse(&scrape(&app, true).await);
    let classic = parse(&scrape(&app, false).await);

    for (format, families) in [("OpenMetrics", &om), ("classic", &classic)] {
        // Every family has its HELP and TYPE, and at least one sample now.
        for (name, f) in families {
            assert!(
                f.help.as_deref().is_some_and(|h| !h.is_empty()),
                "{format}: {name} has no HELP"
            );
            assert!(f.kind.is_some(), "{format}: {name} has no TYPE");
            assert!(
                !f.samples.is_empty(),
                "{format}: {name} has no sample before the first ask"
            );
        }
        // Each route of each answerer waits on nothing yet.
        for (answerer, route) in [
            ("discord", "default"),
            ("discord", "ops"),
            // The terminal keeps a request's route too, and its policy.
            ("terminal", "ops"),
            ("terminal", "none"),
        ] {
            let s = find(
                families,
                "askrelay_pending_requests",
                &[("answerer", answerer), ("route", route)],
            );
            assert_eq!(
                s.map(|s| s.value),
                Some(0.0),
                "{format}: pending on {answerer}/{route}"
            );
        }
        let pending = &families["askrelay_pending_requests"];
        assert_eq!(pending.kind.as_deref(), Some("gauge"), "{format}");
        assert_eq!(pending.samples.len(), 4, "{format}: {:?}", pending.samples);
        // The REST outcomes that are not a server's choice are there at 0 (the command
        // registration at start-up may already have counted a 2xx).
        for status in ["429", "timeout", "network", "other"] {
            let s = find(
                families,
                "askrelay_discord_rest_responses_total",
                &[("status", status)],
            );
            assert_eq!(s.map(|s| s.value), Some(0.0), "{format}: status {status}");
        }
        assert!(
            find(
                families,
                "askrelay_discord_rest_responses_total",
                &[("status", "2xx")]
            )
            .is_some(),
            "{format}: status 2xx"
        );
    }
    // OpenMetrics names a counter's family without `_total`, the classic format with it.
    for (om_name, classic_name, kind) in [
        (
            "askrelay_discord_rest_responses",
            "askrelay_discord_rest_responses_total",
            "counter",
        ),
        ("askrelay_asks", "askrelay_asks_total", "counter"),
        (
            "askrelay_pending_requests",
            "askrelay_pending_requests",
            "gauge",
        ),
    ] {
        assert_eq!(om[om_name].kind.as_deref(), Some(kind), "{om_name}");
        assert_eq!(
            classic[classic_name].kind.as_deref(),
            Some(kind),
            "{classic_name}"
        );
    }
    // The same families in both, only named as each format names them.
    let om_names: BTreeSet<String> = om
        .iter()
        .map(|(n, f)| match f.kind.as_deref() {
            Some("counter") => format!("{n}_total"),
            _ => n.clone(),
        })
        .collect();
    let classic_names: BTreeSet<String> = classic.keys().cloned().collect();
    assert_eq!(om_names, classic_names);
}

/// The series table of docs/operations.md's "Metrics": name → (type, labels, served).
fn documented() -> BTreeMap<String, (String, BTreeSet<String>, String)> {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operations.md"),
    )
    .unwrap();
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Metrics\n"))
        .expect("a Metrics section");
    let mut out = BTreeMap::new();
    for row in section.lines().filter(|l| l.starts_with("| `askrelay_")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // "", series, type, labels, served, what, "".
        assert_eq!(cells.len(), 7, "a row of five cells: {row}");
        let name = cells[1].trim_matches('`').to_owned();
        let labels = cells[3]
            .split(',')
            .map(|l| l.trim().trim_matches('`').to_owned())
            .filter(|l| !l.is_empty())
            .collect();
        let served = cells[4].to_owned();
        assert!(
            ["always", "with Discord", "with Slack", "in cluster mode"].contains(&served.as_str()),
            "{name}: served {served:?}"
        );
        assert!(
            out.insert(name.clone(), (cells[2].to_owned(), labels, served))
                .is_none(),
            "{name} is listed twice"
        );
    }
    assert!(out.len() >= 10, "{out:?}");
    out
}

/// A classic-format scrape as the docs table would list it: name → (type, label names; `le`
/// is the histogram's own).
fn as_documented(
    families: &BTreeMap<String, Family>,
) -> BTreeMap<String, (String, BTreeSet<String>)> {
    families
        .iter()
        .map(|(name, f)| {
            let labels = f
                .samples
                .iter()
                .flat_map(|s| s.labels.keys())
                .filter(|l| *l != "le")
                .cloned()
                .collect();
            (name.clone(), (f.kind.clone().unwrap_or_default(), labels))
        })
        .collect()
}

/// Checks the first classic scrape of `app` against the docs' rows served by such a daemon (one
/// with Discord and no Slack: Slack's series is checked by `slack::socket::`).
async fn check_docs(app: &App, cluster: bool) {
    let served = as_documented(&parse(&scrape(app, false).await));
    let expected: BTreeMap<String, (String, BTreeSet<String>)> = documented()
        .into_iter()
        .filter(|(_, (_, _, when))| cluster || when != "in cluster mode")
        .filter(|(_, (_, _, when))| when != "with Slack")
        .map(|(name, (kind, labels, _))| (name, (kind, labels)))
        .collect();
    let undocumented: Vec<_> = served
        .keys()
        .filter(|n| !expected.contains_key(*n))
        .collect();
    let missing: Vec<_> = expected
        .keys()
        .filter(|n| !served.contains_key(*n))
        .collect();
    assert!(
        undocumented.is_empty(),
        "served but not in docs/operations.md: {undocumented:?}"
    );
    assert!(
        missing.is_empty(),
        "in docs/operations.md but not served: {missing:?}"
    );
    for (name, (kind, labels)) in &expected {
        assert_eq!(
            &served[name],
            &(kind.clone(), labels.clone()),
            "{name}: type and labels"
        );
    }
}

#[tokio::test]
async fn operations_md_lists_every_series_the_daemon_serves() {
    let app = App::discord_with(everything).await;
    let cluster = !app.config.database_url.starts_with("sqlite:");
    check_docs(&app, cluster).await;
}

#[tokio::test]
async fn operations_md_lists_every_series_a_cluster_node_serves() {
    let scratch = match ScratchDb::create().await {
        Ok(db) => db,
        Err(e) => {
            skip(
                "metrics::operations_md_lists_every_series_a_cluster_node_serves",
                &format!("no PostgreSQL server for a scratch database ({e:#})"),
            );
            return;
        }
    };
    let url = scratch.url.clone();
    let app = App::build(Some(StandIn::start().await), DaemonHooks::default(), |c| {
        everything(c);
        c.database_url = url;
    })
    .await;
    check_docs(&app, true).await;
}

/// Every PromQL query of the dashboard: each target's `expr` and each template's `query`.
fn dashboard_queries() -> Vec<String> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana-dashboard.json"),
    )
    .unwrap();
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut queries = Vec::new();
    let panels = dashboard["panels"].as_array().expect("panels");
    for panel in panels {
        let targets = panel["targets"].as_array().unwrap_or_else(|| {
            panic!("panel {:?} has no targets", panel["title"]);
        });
        assert!(
            !targets.is_empty(),
            "panel {:?} queries nothing",
            panel["title"]
        );
        for t in targets {
            let expr = t["expr"]
                .as_str()
                .unwrap_or_else(|| panic!("a target of {:?} without expr", panel["title"]));
            queries.push(expr.to_owned());
        }
    }
    for var in dashboard["templating"]["list"]
        .as_array()
        .expect("templating")
    {
        if var["type"] == "query" {
            queries.push(var["query"].as_str().expect("a query").to_owned());
        }
    }
    queries
}

/// The metric names in a PromQL query: identifiers that start with `askrelay_`, outside
/// quoted strings.
fn metric_names(query: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_string = false;
    let mut word = String::new();
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        if word.starts_with("askrelay_") {
            names.push(std::mem::take(&mut word));
        }
        word.clear();
        if c == '"' {
            in_string = true;
        }
    }
    if word.starts_with("askrelay_") {
        names.push(word);
    }
    names
}

/// The labels an aggregation groups by: `by (a, b)` and `label_values(…, a)`.
fn grouped_labels(query: &str) -> Vec<String> {
    let mut labels = Vec::new();
    for part in query.split("by (").skip(1) {
        let inner = part.split(')').next().unwrap_or_default();
        labels.extend(inner.split(',').map(|l| l.trim().to_owned()));
    }
    if let Some(args) = query.strip_prefix("label_values(") {
        if let Some((_, label)) = args.trim_end_matches(')').rsplit_once(',') {
            labels.push(label.trim().to_owned());
        }
    }
    labels
}

#[tokio::test]
async fn the_grafana_dashboard_queries_only_series_served_from_the_first_scrape() {
    let app = App::discord_with(everything).await;
    // What Prometheus scrapes (OpenMetrics), before any ask.
    let families = parse(&scrape(&app, true).await);
    let samples: Vec<&Sample> = families.values().flat_map(|f| &f.samples).collect();
    let queries = dashboard_queries();
    assert!(queries.len() >= 12, "{queries:?}");
    let mut used = BTreeSet::new();
    for q in &queries {
        let names = metric_names(q);
        assert!(
            !names.is_empty(),
            "a query that names no askrelay series: {q}"
        );
        for name in &names {
            let of_name: Vec<&&Sample> = samples.iter().filter(|s| &s.name == name).collect();
            assert!(
                !of_name.is_empty(),
                "the dashboard queries {name}, which the first /metrics lacks: {q}"
            );
            // Grouping by a label the series does not have would give one unlabelled line.
            // job and instance are Prometheus's own target labels.
            for label in grouped_labels(q) {
                if label == "job" || label == "instance" {
                    continue;
                }
                assert!(
                    of_name.iter().any(|s| s.labels.contains_key(&label)),
                    "{q} groups by {label}, which {name} lacks"
                );
            }
            used.insert(name.clone());
        }
    }
    // The dashboard shows each part the docs say it does.
    for name in [
        "askrelay_pending_requests",
        "askrelay_asks_total",
        "askrelay_answers_total",
        "askrelay_errors_total",
        "askrelay_answer_latency_seconds_bucket",
        "askrelay_discord_rest_responses_total",
        "askrelay_discord_gateway_connected",
        "askrelay_store_errors_total",
        "askrelay_outbox_oldest_due_seconds",
    ] {
        assert!(used.contains(name), "no panel shows {name}: {used:?}");
    }
}

#[test]
fn query_parsing_finds_names_outside_strings_and_grouping_labels() {
    let q = r#"sum by (answerer, route) (rate(askrelay_asks_total{job=~"askrelay_x", instance=~"$instance"}[5m])) / askrelay_answers_total"#;
    assert_eq!(
        metric_names(q),
        ["askrelay_asks_total", "askrelay_answers_total"]
    );
    assert_eq!(grouped_labels(q), ["answerer", "route"]);
    assert_eq!(
        grouped_labels("label_values(askrelay_store_errors_total{job=~\"$job\"}, instance)"),
        ["instance"]
    );
    let s = parse_sample(r#"askrelay_pending_requests{answerer="discord",route="a\"b,c"} 2"#);
    assert_eq!(s.labels["route"], r#"a\"b,c"#);
    assert_eq!(s.labels["answerer"], "discord");
    assert_eq!(s.value, 2.0);
}

/// The YAML block of docs/operations.md's "Alert rules".
fn alert_rules() -> String {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operations.md"),
    )
    .unwrap();
    let section = doc
        .split("\n### Alert rules\n")
        .nth(1)
        .expect("an Alert rules section");
    let block = section
        .split("```yaml\n")
        .nth(1)
        .expect("a yaml block")
        .split("\n```")
        .next()
        .unwrap();
    format!("{block}\n")
}

/// Each rule of docs/operations.md fired on the series it is for, by `promtool test rules`:
/// the inputs are what a cluster's nodes serve (`instance` tells the nodes apart).
const ALERT_TESTS: &str = r#"rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  # b took over after a stopped renewing, 12 s without a leader.
  - interval: 1m
    input_series:
      - series: 'askrelay_cluster_failovers_total{cause="expired",instance="b"}'
        values: '0 0 1 1 1'
      - series: 'askrelay_cluster_failovers_total{cause="released",instance="b"}'
        values: '0 0 0 0 0'
      - series: 'askrelay_cluster_leader_gap_seconds_count{instance="b"}'
        values: '0 0 1 1 1'
      - series: 'askrelay_cluster_leader_gap_seconds_bucket{instance="b",le="5.0"}'
        values: '0 0 0 0 0'
      - series: 'askrelay_cluster_holder{instance="a",node="b"}'
        values: '1 1 1 1 1'
    alert_rule_test:
      - eval_time: 0m
        alertname: AskrelayLeaderFailedOver
        exp_alerts: []
      - eval_time: 3m
        alertname: AskrelayLeaderFailedOver
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: "askrelay: the cluster's leader changed after the old one stopped renewing"
      - eval_time: 3m
        alertname: AskrelayLeaderGapLong
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: "askrelay: a failover left the cluster without a leader for more than 5 s"
      - eval_time: 3m
        alertname: AskrelayNoLeader
        exp_alerts: []
  # A clean handover within 5 s is no alert.
  - interval: 1m
    input_series:
      - series: 'askrelay_cluster_failovers_total{cause="released",instance="b"}'
        values: '0 0 1 1 1'
      - series: 'askrelay_cluster_failovers_total{cause="expired",instance="b"}'
        values: '0 0 0 0 0'
      - series: 'askrelay_cluster_leader_gap_seconds_count{instance="b"}'
        values: '0 0 1 1 1'
      - series: 'askrelay_cluster_leader_gap_seconds_bucket{instance="b",le="5.0"}'
        values: '0 0 1 1 1'
    alert_rule_test:
      - eval_time: 3m
        alertname: AskrelayLeaderFailedOver
        exp_alerts: []
      - eval_time: 3m
        alertname: AskrelayLeaderGapLong
        exp_alerts: []
  # Neither node sees a leader.
  - interval: 1m
    input_series:
      - series: 'askrelay_cluster_holder{instance="a",node=""}'
        values: '0x5'
      - series: 'askrelay_cluster_holder{instance="b",node=""}'
        values: '0x5'
    alert_rule_test:
      - eval_time: 2m
        alertname: AskrelayNoLeader
        exp_alerts:
          - exp_labels: {severity: critical}
            exp_annotations:
              summary: "askrelay: no node of the cluster sees a leader"
  # a and b each name themselves.
  - interval: 1m
    input_series:
      - series: 'askrelay_cluster_holder{instance="a",node="a"}'
        values: '1x5'
      - series: 'askrelay_cluster_holder{instance="b",node="b"}'
        values: '1x5'
    alert_rule_test:
      - eval_time: 3m
        alertname: AskrelayLeaderDisputed
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: "askrelay: the cluster's nodes name different leaders"
      - eval_time: 3m
        alertname: AskrelayNoLeader
        exp_alerts: []
  # Questions wait and nothing is posted.
  - interval: 1m
    input_series:
      - series: 'askrelay_outbox_seconds_since_last_post{instance="a"}'
        values: '0 10 40 50 60'
    alert_rule_test:
      - eval_time: 1m
        alertname: AskrelayOutboxNotPosting
        exp_alerts: []
      - eval_time: 4m
        alertname: AskrelayOutboxNotPosting
        exp_alerts:
          - exp_labels: {severity: critical}
            exp_annotations:
              summary: "askrelay: questions wait and nothing was posted for 60 s"
"#;

#[test]
fn the_alert_rules_of_operations_md_pass_promtool() {
    let rules = alert_rules();
    // Every series a rule names is one the daemon serves (a histogram's by its samples).
    let documented = documented();
    for name in metric_names(&rules) {
        let family = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|f| documented.contains_key(*f))
            .unwrap_or(&name);
        assert!(
            documented.contains_key(family),
            "a rule names {name}, which docs/operations.md does not list"
        );
    }
    let promtool = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("promtool"))
            .find(|p| p.is_file())
    });
    let Some(promtool) = promtool else {
        skip(
            "metrics::the_alert_rules_of_operations_md_pass_promtool",
            "promtool is not installed (Debian's prometheus package); the alert rules were not \
             checked",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rules.yml"), &rules).unwrap();
    std::fs::write(dir.path().join("tests.yml"), ALERT_TESTS).unwrap();
    for args in [
        ["check", "rules", "rules.yml"],
        ["test", "rules", "tests.yml"],
    ] {
        let out = std::process::Command::new(&promtool)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "promtool {args:?}:\n{said}");
        assert!(said.contains("SUCCESS"), "promtool {args:?}:\n{said}");
    }
}
