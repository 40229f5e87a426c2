//! The optional HTTP listener (`[http] listen`, off by default): `GET /metrics` (OpenMetrics
//! text, see [`crate::metrics`]) and `GET /healthz` (200 with the `health` facts as JSON when
//! healthy, 503 naming the failing part otherwise).
//!
//! It has no authentication, so it serves only counts and states, never question text, and
//! binds to localhost unless configured otherwise (docs/security.md).

use crate::domain::Hub;
use crate::metrics::Metrics;
use anyhow::{Context, Result};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

#[derive(Clone)]
struct Ctx {
    hub: Hub,
    metrics: Arc<Metrics>,
}

/// Binds `addr` (before anything else starts, so that a taken port stops start-up cleanly).
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("http.listen: cannot listen on {addr}"))
}

/// Serves on `listener` until `shutdown`; returns the address bound (the port, when 0 was
/// asked for).
pub fn serve(
    listener: TcpListener,
    hub: Hub,
    metrics: Arc<Metrics>,
    tasks: &TaskTracker,
    shutdown: CancellationToken,
) -> Result<SocketAddr> {
    let bound = listener.local_addr()?;
    let app = Router::new()
        .route("/metrics", get(metrics_page))
        .route("/healthz", get(healthz))
        .with_state(Ctx { hub, metrics });
    tracing::info!(addr = %bound, "serving /metrics and /healthz over HTTP");
    tasks.spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "the HTTP listener stopped");
        }
    });
    Ok(bound)
}

/// OpenMetrics when the scraper asks for it (`Accept: application/openmetrics-text`, as
/// Prometheus does by default); else the classic text format 0.0.4, which other parsers read
/// (in OpenMetrics they would see every counter as `unknown`).
async fn metrics_page(State(ctx): State<Ctx>, headers: axum::http::HeaderMap) -> Response {
    let body = ctx.metrics.render(&ctx.hub).await;
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    if openmetrics {
        ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], body).into_response()
    } else {
        (
            [(header::CONTENT_TYPE, crate::metrics::CLASSIC_CONTENT_TYPE)],
            crate::metrics::classic_text(&body),
        )
            .into_response()
    }
}

async fn healthz(State(ctx): State<Ctx>) -> Response {
    let health = ctx.hub.health().await;
    let status = if health.failing.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = serde_json::to_string(&health).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
