//! Building the vendors a configuration asks for: the responder (scripted,
//! or an OpenAI-compatible LLM with the scripted fallback), the booking
//! backend (embedded or V2 over HTTP), the dashboard client, post-call
//! processing and the outbox worker.

use crate::call::delivery::{self, Backoff, OutboxWorker, PostCall};
use crate::config::{BackendKind, Config};
use agent::backend::Backend;
use agent::responder::{Responder, ScriptedResponder};
use anyhow::{Context, Result};
use providers::breaker::SharedBreaker;
use providers::dashboard::{DashboardClient, DashboardConfig};
use providers::fallback::{FallbackBudgets, FallbackResponder};
use providers::openai::{OpenAiClient, OpenAiConfig};
use providers::v2::{V2Client, V2Config};
use std::sync::Arc;
use std::time::Duration;

/// The vendors of one process.
#[derive(Clone)]
pub struct Vendors {
    pub store: store::Store,
    pub backend: Arc<dyn Backend>,
    /// `create_callback` outbox label (V2 URL or `embedded:create_callback`).
    pub callback_target: String,
    pub scripted: Arc<ScriptedResponder>,
    pub responder: Arc<dyn Responder>,
    pub dashboard: Option<Arc<DashboardClient>>,
}

/// Open the database named by the configuration (SQLite file or
/// PostgreSQL URL).
pub async fn open_store(cfg: &Config) -> Result<store::Store> {
    let target = cfg.database.to_string_lossy().to_string();
    store::Store::connect(&target)
        .await
        .with_context(|| format!("opening the database {}", store::redact_url(&target)))
}

/// The OpenAI-compatible client of the configuration, if one is set.
pub fn llm_client(cfg: &Config) -> Result<Option<OpenAiClient>> {
    if !cfg.llm.enabled() {
        return Ok(None);
    }
    let key = cfg.llm.api_key.trim();
    let oc = OpenAiConfig {
        base_url: cfg.llm.effective_base_url().to_string(),
        model: cfg.llm.model.clone(),
        api_key: (!key.is_empty()).then(|| key.to_string()),
        profile: cfg.business.clone(),
        ..OpenAiConfig::default()
    };
    Ok(Some(
        OpenAiClient::new(oc).context("setting up the LLM client")?,
    ))
}

/// Who phrases the LLM turns: the model itself, or (`llm.kind = "adk"`)
/// an ADK agent on the same model, the model's client keeping extraction,
/// the wrap-up and classification.
async fn phrasing(cfg: &Config, llm: OpenAiClient) -> Result<Arc<dyn Responder>> {
    if cfg.llm.kind.trim() != "adk" {
        return Ok(Arc::new(llm));
    }
    #[cfg(feature = "adk")]
    {
        let inner: Arc<dyn Responder> = Arc::new(llm);
        let model_client = llm_client(cfg)?.context("llm.kind = adk without a model")?;
        let model = adk_bridge::openai::OpenAiModel::new(Arc::new(model_client));
        // The agent's sessions live beside CallLock's database (see
        // open_sessions): a call's conversation survives a crash.
        let sessions = adk_bridge::session::open_sessions(&cfg.database.to_string_lossy()).await?;
        let adk = adk_bridge::responder::AdkResponder::new(Arc::new(model), inner)
            .map_err(|e| anyhow::anyhow!("setting up the ADK agent: {e}"))?
            .with_sessions(sessions);
        Ok(Arc::new(adk))
    }
    #[cfg(not(feature = "adk"))]
    {
        drop(llm);
        anyhow::bail!("llm.kind = \"adk\" needs a build with --features calllock/adk")
    }
}

/// The V2 client of the configuration (kind = v2).
pub fn v2_client(cfg: &Config) -> Result<Option<V2Client>> {
    if cfg.backend.kind != BackendKind::V2 {
        return Ok(None);
    }
    let key = cfg.backend.api_key.trim();
    let vc = V2Config {
        base_url: cfg.backend.url.trim().to_string(),
        api_key: (!key.is_empty()).then(|| key.to_string()),
        timeout: Duration::from_secs_f64(cfg.backend.timeout_s),
    };
    Ok(Some(
        V2Client::new(vc).context("setting up the V2 backend client")?,
    ))
}

/// The dashboard client of the configuration, if delivery is configured.
pub fn dashboard_client(cfg: &Config) -> Result<Option<DashboardClient>> {
    if !cfg.dashboard.enabled() {
        return Ok(None);
    }
    let d = &cfg.dashboard;
    let dc = DashboardConfig {
        jobs_url: d.jobs_url.trim().to_string(),
        calls_url: d.calls_url.trim().to_string(),
        alerts_url: d.alerts_url.trim().to_string(),
        webhook_secret: d.webhook_secret.clone(),
        user_email: d.user_email.clone(),
        timeout: Duration::from_secs_f64(d.timeout_s),
    };
    Ok(Some(
        DashboardClient::new(dc).context("setting up the dashboard client")?,
    ))
}

/// Everything configured, over an open store. The embedded backend is
/// seeded with the demo customers (once per database: a database that had
/// them keeps what calls changed since).
pub async fn vendors(cfg: &Config, store: store::Store) -> Result<Vendors> {
    let scripted = Arc::new(ScriptedResponder::new(cfg.business.clone()));
    let (backend, callback_target): (Arc<dyn Backend>, String) = match v2_client(cfg)? {
        Some(v2) => {
            let target = format!(
                "{}/webhook/retell/create_callback",
                cfg.backend.url.trim().trim_end_matches('/')
            );
            (Arc::new(v2), target)
        }
        None => {
            let embedded = store::EmbeddedBackend::new(store.clone(), cfg.business.clone());
            embedded
                .seed_demo(chrono::Utc::now())
                .await
                .context("seeding demo data")?;
            (Arc::new(embedded), "embedded:create_callback".into())
        }
    };
    let responder: Arc<dyn Responder> = match llm_client(cfg)? {
        Some(llm) => Arc::new(
            FallbackResponder::new(
                phrasing(cfg, llm).await?,
                scripted.clone(),
                FallbackBudgets {
                    first_token: Duration::from_secs_f64(cfg.llm.first_token_budget_s),
                    hedge_after: (cfg.llm.hedge_after_s > 0.0)
                        .then(|| Duration::from_secs_f64(cfg.llm.hedge_after_s)),
                    ..FallbackBudgets::default()
                },
            )
            .with_breaker(SharedBreaker::new(
                cfg.llm.breaker_failures,
                cfg.llm.breaker_cooldown_s,
            )),
        ),
        None => scripted.clone(),
    };
    Ok(Vendors {
        store,
        backend,
        callback_target,
        scripted,
        responder,
        dashboard: dashboard_client(cfg)?.map(Arc::new),
    })
}

impl Vendors {
    /// Post-call processing with these vendors.
    pub fn post_call(&self, cfg: &Config) -> PostCall {
        PostCall {
            store: self.store.clone(),
            dashboard: self.dashboard.clone(),
            user_email: cfg.dashboard.user_email.clone(),
            backend: self.backend.clone(),
            callback_target: self.callback_target.clone(),
            responder: self.responder.clone(),
            backoff: backoff(cfg),
            clock: delivery::system_clock(),
            sleeper: delivery::real_sleeper(),
            reserve_s: cfg.outbox.lease_s,
            worker: worker_name(cfg),
        }
    }

    /// An outbox worker with these vendors.
    pub fn outbox_worker(&self, cfg: &Config) -> OutboxWorker {
        OutboxWorker {
            store: self.store.clone(),
            dashboard: self.dashboard.clone(),
            backend: self.backend.clone(),
            worker: worker_name(cfg),
            backoff: backoff(cfg),
            lease_s: cfg.outbox.lease_s,
            batch: 50,
        }
    }
}

/// This process's name in outbox leases and as the owner of its live calls
/// (see [`crate::instance`]).
pub fn worker_name(cfg: &Config) -> String {
    crate::instance::process_id(&cfg.instance)
}

fn backoff(cfg: &Config) -> Backoff {
    Backoff {
        base_s: cfg.outbox.backoff_base_s,
        max_s: cfg.outbox.backoff_max_s,
    }
}
