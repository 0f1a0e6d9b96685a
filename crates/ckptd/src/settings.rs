//! The settings in force for each project: every request about a project
//! first looks at the user's and the project's config file (one `stat`
//! each; a parse only when one changed), so a changed file takes effect at
//! the next request without a restart. A bad file leaves the last good
//! settings in force and is reported (`status`'s `config_error`).

use std::sync::{Arc, Mutex};

use ckpt_core::Retention;
use ckpt_settings::{CachedFile, Layer, Settings, SettingsError, Source};

use crate::daemon::Daemon;
use crate::mutex::lock;
use crate::project::ProjectHandle;

/// How long an unreferenced blob stays before gc may take it.
const GC_GRACE_SECS: u64 = 3600;

/// The user's file and the daemon's own environment, shared by every project.
pub struct UserSettings {
    /// The file, and a generation that moves each time what it holds changed.
    file: Mutex<(CachedFile, u64)>,
    /// `CKPT_<KEY>` as the daemon was started with.
    env: Result<Layer, SettingsError>,
    grace_secs: u64,
}

impl UserSettings {
    pub fn new(env: Result<Layer, SettingsError>, grace_secs: Option<u64>) -> UserSettings {
        let path = ckpt_settings::user_file().unwrap_or_default();
        UserSettings {
            file: Mutex::new((CachedFile::new(path, Source::User), 0)),
            env,
            grace_secs: grace_secs.unwrap_or(GC_GRACE_SECS),
        }
    }

    /// What is wrong with the user's file or the environment, now.
    pub fn error(&self) -> Option<String> {
        let mut f = lock(&self.file);
        if f.0.refresh() {
            f.1 += 1;
        }
        let errors: Vec<String> =
            f.0.error()
                .map(ToString::to_string)
                .into_iter()
                .chain(self.env.as_ref().err().map(ToString::to_string))
                .collect();
        (!errors.is_empty()).then(|| errors.join("; "))
    }
}

/// One project's file and the settings last resolved for it.
pub struct ProjectSettings {
    file: Mutex<CachedFile>,
    state: Mutex<Resolved>,
}

struct Resolved {
    /// The user file's generation these were resolved with.
    user_gen: Option<u64>,
    settings: Arc<Settings>,
    policy: Retention,
    error: Option<String>,
}

impl ProjectSettings {
    pub fn new(root: &std::path::Path) -> ProjectSettings {
        ProjectSettings {
            file: Mutex::new(CachedFile::new(
                ckpt_settings::project_file(root),
                Source::Project,
            )),
            state: Mutex::new(Resolved {
                user_gen: None,
                settings: Arc::default(),
                policy: Retention::default(),
                error: None,
            }),
        }
    }
}

impl ProjectHandle {
    /// The settings last resolved (by [`refresh`]).
    pub fn settings(&self) -> Arc<Settings> {
        Arc::clone(&lock(&self.settings.state).settings)
    }

    /// The retention policy of the settings last resolved.
    pub fn retention_policy(&self) -> Retention {
        lock(&self.settings.state).policy.clone()
    }

    /// What is wrong with a config file or variable, as last looked at.
    pub fn config_error(&self) -> Option<String> {
        lock(&self.settings.state).error.clone()
    }
}

/// Looks at the config files again and, when what they hold changed,
/// resolves `h`'s settings anew and hands the capture settings to its
/// core (a change of excludes asks for a full scan, which captures what
/// they no longer exclude).
pub fn refresh(d: &Daemon, h: &ProjectHandle) -> Arc<Settings> {
    let user = &d.user_settings;
    let (user_gen, user_layer, user_error) = {
        let mut f = lock(&user.file);
        if f.0.refresh() {
            f.1 += 1;
        }
        (
            f.1,
            f.0.layer().cloned(),
            f.0.error().map(ToString::to_string),
        )
    };
    let mut file = lock(&h.settings.file);
    let project_changed = file.refresh();
    let mut state = lock(&h.settings.state);
    if !project_changed && state.user_gen == Some(user_gen) {
        return Arc::clone(&state.settings);
    }
    let layers: Vec<&Layer> = user_layer
        .iter()
        .chain(file.layer())
        .chain(user.env.as_ref().ok())
        .collect();
    let settings = Arc::new(ckpt_settings::resolve(&layers));
    let errors: Vec<String> = user_error
        .into_iter()
        .chain(file.error().map(ToString::to_string))
        .chain(user.env.as_ref().err().map(ToString::to_string))
        .collect();
    drop(file);
    let first = state.user_gen.is_none();
    state.user_gen = Some(user_gen);
    state.error = (!errors.is_empty()).then(|| errors.join("; "));
    if let Some(e) = &state.error {
        tracing::warn!(root = %h.root.display(), "config: {e}; the last good settings stay");
    }
    let changed = first || state.settings != settings;
    state.settings = Arc::clone(&settings);
    state.policy = Retention {
        keep_turns: settings.retention_turns() as usize,
        max_age_secs: settings.retention_days().saturating_mul(24 * 3600),
        grace_secs: user.grace_secs,
        budget_bytes: settings.store_budget_bytes(),
    };
    drop(state);
    if changed {
        let (max, excludes) = (settings.max_file_bytes(), settings.excludes().to_vec());
        match h.call(|p| Ok(p.set_capture(max, excludes))) {
            Ok(true) if !first => h.request_reconcile(),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(root = %h.root.display(), error = %e.message, "applying the settings")
            }
        }
    }
    settings
}
