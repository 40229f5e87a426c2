//! The daemon's metrics: one Prometheus registry per daemon (never a global one, so several
//! daemons in one process keep their own numbers), fed by the core through
//! [`crate::domain::metrics::Recorder`], by the Discord answerer's REST client through
//! [`RestRecorder`], and, for the gauges, read from the hub when scraped. Only counts and durations: never question text,
//! labels, names or ids.
//!
//! Served on `GET /metrics` by [`crate::http`]: OpenMetrics text, or the classic text format
//! 0.0.4 ([`classic_text`]) when the scraper does not ask for OpenMetrics.

use crate::domain::cluster::{ClusterHandle, Takeover};
use crate::domain::metrics::{ClusterRecorder, Recorder, RestRecorder};
use crate::domain::{ErrorCode, Hub};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::time::Duration;

type Labels = Vec<(&'static str, String)>;

/// The content type of [`Metrics::render`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`classic_text`]: Prometheus's text format 0.0.4.
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The OpenMetrics text of [`Metrics::render`] in the classic text format 0.0.4: a counter's
/// `# TYPE` and `# HELP` name its `_total` sample (the classic parser reads a family whose
/// samples have another name as untyped), and OpenMetrics' `# UNIT` and `# EOF` go.
pub fn classic_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# TYPE ", "# HELP "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// The outcomes of Discord REST calls that start at 0: a success, the rate limit, and the ways
/// of getting no HTTP answer. Any other status (404, 503, …) appears with its first call: the
/// statuses Discord may answer are too many to list.
const REST_AT_START: [&str; 5] = ["2xx", "429", "timeout", "network", "other"];

/// Seconds from asked to answered: people answer in seconds to hours.
const LATENCY_BUCKETS: [f64; 14] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0,
    86400.0,
];

/// Seconds without a leader at a failover: the default lease is 10 s, and a failover within
/// Discord's patience takes a few.
const GAP_BUCKETS: [f64; 13] = [
    0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0, 12.5, 15.0, 20.0, 30.0, 60.0,
];

/// Why the lead changed hands (`askrelay_cluster_failovers_total`'s `cause`).
const FAILOVER_CAUSES: [&str; 2] = ["expired", "released"];

#[derive(Debug)]
struct ClusterGauges {
    epoch: Gauge,
    leader_age: Gauge<f64, std::sync::atomic::AtomicU64>,
    leads: Gauge,
    /// Counted by the node that took the lead.
    failovers: Family<Labels, Counter>,
    gaps: Histogram,
    /// 1 for the node this one last saw holding the lease; one series, `node=""` at 0, when
    /// it saw none.
    holder: Family<Labels, Gauge>,
    /// How long the outbox has been due without a post anywhere in the cluster (0 when nothing
    /// is due): read when scraped, NaN when the store did not answer in time.
    since_last_post: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// The cluster, once the store took its lease, for the last post's time.
    handle: std::sync::OnceLock<ClusterHandle>,
}

#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pending: Family<Labels, Gauge>,
    asks: Family<Labels, Counter>,
    answers: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    latency: Histogram,
    rest: Family<Labels, Counter>,
    /// Registered only when Discord is configured: the gauge, and the name of the answerer
    /// whose connection it shows.
    gateway: Option<(&'static str, Gauge)>,
    /// Registered only when Slack is configured: its Socket Mode connection, as the gateway's.
    slack: Option<(&'static str, Gauge)>,
    store_errors: Counter,
    /// The oldest outbox work's age (0 when none is due), read when scraped within the health
    /// deadline; absent from a scrape when the store did not answer in time.
    outbox_oldest: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// Registered only in cluster mode: the lease's epoch, how long ago the leader last renewed
    /// it (as this node last saw), and whether this node leads.
    cluster: Option<ClusterGauges>,
    /// One scrape at a time: the gauges are reset and filled from the hub while encoding.
    scrape: tokio::sync::Mutex<()>,
}

impl Metrics {
    /// The registry of one daemon; the Discord series only with `discord`, the name the
    /// Discord answerer is known by (the hub reports its connection under it), Slack's only
    /// with `slack` (likewise), and the cluster's only with `cluster`.
    pub fn new(
        discord: Option<&'static str>,
        slack: Option<&'static str>,
        cluster: bool,
    ) -> Metrics {
        let mut registry = Registry::default();
        let pending = Family::<Labels, Gauge>::default();
        let asks = Family::<Labels, Counter>::default();
        let answers = Family::<Labels, Counter>::default();
        let errors = Family::<Labels, Counter>::default();
        let latency = Histogram::new(LATENCY_BUCKETS);
        let rest = Family::<Labels, Counter>::default();
        let gateway = discord.map(|name| (name, Gauge::default()));
        let slack_gauge = slack.map(|name| (name, Gauge::default()));
        let store_errors = Counter::default();
        registry.register(
            "askrelay_pending_requests",
            "Requests waiting for an answer, by answerer and route",
            pending.clone(),
        );
        // The encoder adds `_total` to counters.
        registry.register(
            "askrelay_asks",
            "Requests stored and handed to an answerer, by answerer",
            asks.clone(),
        );
        registry.register(
            "askrelay_answers",
            "Requests answered (every question settled), by answerer",
            answers.clone(),
        );
        registry.register(
            "askrelay_errors",
            "Asks that got an error, by code: refused, or ended without an answer",
            errors.clone(),
        );
        registry.register(
            "askrelay_answer_latency_seconds",
            "Time from asked to answered, per answered request",
            latency.clone(),
        );
        if let Some((_, gateway)) = &gateway {
            registry.register(
                "askrelay_discord_rest_responses",
                "Discord REST calls by outcome: the HTTP status of a failure, 2xx for a \
                 success, timeout or network for no answer",
                rest.clone(),
            );
            registry.register(
                "askrelay_discord_gateway_connected",
                "1 while the Discord gateway session is connected",
                gateway.clone(),
            );
        }
        if let Some((_, connected)) = &slack_gauge {
            registry.register(
                "askrelay_slack_socket_connected",
                "1 while the Slack Socket Mode connection is up",
                connected.clone(),
            );
        }
        registry.register(
            "askrelay_store_errors",
            "Store (database) calls that failed",
            store_errors.clone(),
        );
        let outbox_oldest = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        registry.register(
            "askrelay_outbox_oldest_due_seconds",
            "How long the oldest outbox work (a post or an edit) has been due, 0 when none is",
            outbox_oldest.clone(),
        );
        let cluster = cluster.then(|| {
            let g = ClusterGauges {
                epoch: Gauge::default(),
                leader_age: Gauge::default(),
                leads: Gauge::default(),
                failovers: Family::default(),
                gaps: Histogram::new(GAP_BUCKETS),
                holder: Family::default(),
                since_last_post: Gauge::default(),
                handle: std::sync::OnceLock::new(),
            };
            registry.register(
                "askrelay_cluster_failovers",
                "Changes of leader this node made by taking the lead, by cause: expired (the \
                 old leader stopped renewing) or released (it gave the lead back)",
                g.failovers.clone(),
            );
            for cause in FAILOVER_CAUSES {
                drop(
                    g.failovers
                        .get_or_create(&vec![("cause", cause.to_owned())]),
                );
            }
            registry.register(
                "askrelay_cluster_leader_gap_seconds",
                "At each failover this node made, from the old leader's last renewal (or its \
                 release) to this node's take, on the database's clock",
                g.gaps.clone(),
            );
            registry.register(
                "askrelay_cluster_holder",
                "1 for the node this node last saw holding the lead's lease; node=\"\" at 0 \
                 when it saw none",
                g.holder.clone(),
            );
            registry.register(
                "askrelay_outbox_seconds_since_last_post",
                "While outbox work is due: how long since a question was last posted anywhere \
                 in the cluster, or since the work became due if that is later; 0 when none is",
                g.since_last_post.clone(),
            );
            registry.register(
                "askrelay_cluster_lease_epoch",
                "The epoch of the cluster's lead: one more at every change of leader",
                g.epoch.clone(),
            );
            registry.register(
                "askrelay_cluster_leader_heartbeat_age_seconds",
                "How long ago the leader last renewed its lease, as this node last saw it \
                 (NaN when no node leads)",
                g.leader_age.clone(),
            );
            registry.register(
                "askrelay_cluster_leader",
                "1 while this node leads the cluster",
                g.leads.clone(),
            );
            g
        });
        // The known label values start at 0, so that rate() and absence alerts work from
        // start-up instead of from the first event. The pending gauge's are the hub's routes,
        // filled at each scrape ([`Hub::pending_by_route`]).
        for answerer in std::iter::once("terminal").chain(discord).chain(slack) {
            let label = vec![("answerer", answerer.to_owned())];
            drop(asks.get_or_create(&label));
            drop(answers.get_or_create(&label));
        }
        for code in ErrorCode::ALL {
            drop(errors.get_or_create(&vec![("code", code.as_str().to_owned())]));
        }
        if discord.is_some() {
            for status in REST_AT_START {
                drop(rest.get_or_create(&vec![("status", status.to_owned())]));
            }
        }
        Metrics {
            registry,
            pending,
            asks,
            answers,
            errors,
            latency,
            rest,
            gateway,
            slack: slack_gauge,
            store_errors,
            outbox_oldest,
            cluster,
            scrape: tokio::sync::Mutex::new(()),
        }
    }

    /// The OpenMetrics text of every series, with the gauges read from `hub` now.
    pub async fn render(&self, hub: &Hub) -> String {
        let _one = self.scrape.lock().await;
        self.pending.clear();
        for ((answerer, route), n) in hub.pending_by_route() {
            self.pending
                .get_or_create(&vec![("answerer", answerer), ("route", route)])
                .set(n as i64);
        }
        if let Some((discord, gateway)) = &self.gateway {
            let up = hub
                .connections()
                .iter()
                .any(|(name, c)| name == discord && *c.borrow());
            gateway.set(i64::from(up));
        }
        if let Some((slack, connected)) = &self.slack {
            let up = hub
                .connections()
                .iter()
                .any(|(name, c)| name == slack && *c.borrow());
            connected.set(i64::from(up));
        }
        let handle = self.cluster.as_ref().and_then(|g| g.handle.get());
        let backlog = tokio::time::timeout(crate::protocol::HEALTH_DEADLINE, async {
            let oldest = hub.outbox_oldest_due().await.map_err(|e| e.message)?;
            // Only with work due, in a cluster: when the cluster last posted.
            let last = match handle {
                Some(c) if !oldest.is_zero() => {
                    c.last_post_ms().await.map_err(|e| format!("{e:#}"))?
                }
                _ => None,
            };
            Ok::<_, String>((oldest, last))
        })
        .await;
        let since_last_post = match backlog {
            Ok(Ok((oldest, last))) => {
                self.outbox_oldest.set(oldest.as_secs_f64());
                let since = last.map_or(oldest, |at| {
                    let ago = (crate::domain::clock::now_ms() - at).max(0) as u64;
                    oldest.min(Duration::from_millis(ago))
                });
                since.as_secs_f64()
            }
            _ => {
                self.outbox_oldest.set(f64::NAN);
                f64::NAN
            }
        };
        if let Some(g) = &self.cluster {
            let lead = hub.lead_status();
            g.epoch.set(lead.epoch);
            g.leader_age
                .set(lead.leader_age().map_or(f64::NAN, |a| a.as_secs_f64()));
            g.leads.set(i64::from(matches!(
                hub.role(),
                crate::domain::cluster::Role::Leader { .. }
            )));
            g.holder.clear();
            match lead.leader {
                Some(node) => g.holder.get_or_create(&vec![("node", node)]).set(1),
                None => g
                    .holder
                    .get_or_create(&vec![("node", String::new())])
                    .set(0),
            };
            g.since_last_post.set(since_last_post);
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Metrics {
    /// The cluster this daemon belongs to, once its store took the lease: the outbox's
    /// progress is read from it at each scrape.
    pub fn watch_cluster(&self, cluster: ClusterHandle) {
        if let Some(g) = &self.cluster {
            let _ = g.handle.set(cluster);
        }
    }
}

impl ClusterRecorder for Metrics {
    fn took_over(&self, takeover: &Takeover) {
        if let Some(g) = &self.cluster {
            let cause = if takeover.released {
                "released"
            } else {
                "expired"
            };
            g.failovers
                .get_or_create(&vec![("cause", cause.to_owned())])
                .inc();
            g.gaps.observe(takeover.gap.as_secs_f64());
        }
    }
}

/// The Discord answerer's REST calls; "2xx" stands for any success (serenity does not say
/// which).
impl RestRecorder for Metrics {
    fn rest_response(&self, status: &str) {
        self.rest
            .get_or_create(&vec![("status", status.to_owned())])
            .inc();
    }
}

impl Recorder for Metrics {
    fn asked(&self, answerer: &str) {
        self.asks
            .get_or_create(&vec![("answerer", answerer.to_owned())])
            .inc();
    }

    fn answered(&self, answerer: &str, waited: Duration) {
        self.answers
            .get_or_create(&vec![("answerer", answerer.to_owned())])
            .inc();
        self.latency.observe(waited.as_secs_f64());
    }

    fn failed(&self, code: ErrorCode) {
        self.errors
            .get_or_create(&vec![("code", code.as_str().to_owned())])
            .inc();
    }

    fn store_failed(&self) {
        self.store_errors.inc();
    }
}

#[cfg(test)]
mod tests {
    use super::classic_text;

    #[test]
    fn the_classic_format_names_counters_by_their_samples_and_has_no_eof() {
        let om = "# HELP askrelay_asks Requests stored.\n# TYPE askrelay_asks counter\n\
                  askrelay_asks_total{answerer=\"terminal\"} 0\n\
                  # HELP askrelay_pending_requests Waiting.\n# TYPE askrelay_pending_requests gauge\n\
                  askrelay_pending_requests 3\n# EOF\n";
        assert_eq!(
            classic_text(om),
            "# HELP askrelay_asks_total Requests stored.\n# TYPE askrelay_asks_total counter\n\
             askrelay_asks_total{answerer=\"terminal\"} 0\n\
             # HELP askrelay_pending_requests Waiting.\n# TYPE askrelay_pending_requests gauge\n\
             askrelay_pending_requests 3\n"
        );
    }
}
