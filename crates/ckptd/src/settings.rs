//! The settings in force for each project: every request about a project
//! first looks at the user's and the project's config file (one `stat`
//! each; a parse only when one changed), so a changed file takes effect at
//! the next request without a restart. A bad file leaves the last good
//! settings in force and is reported (`status`'s `config_error`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use ckpt_core::Retention;
use ckpt_settings::{CachedFile, Layer, Settings, SettingsError, Source};

use crate::mutex::lock;

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
    pub fn new(root: &Path) -> ProjectSettings {
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

/// What [`ProjectSettings::refresh`] found.
pub struct Refreshed {
    pub settings: Arc<Settings>,
    /// What the files hold changed since the last look (or this was the
    /// first): the capture settings are to be handed to the core again.
    pub changed: bool,
    pub first: bool,
}

impl ProjectSettings {
    /// The settings last resolved (by [`ProjectSettings::refresh`]).
    pub fn settings(&self) -> Arc<Settings> {
        Arc::clone(&lock(&self.state).settings)
    }

    /// The retention policy of the settings last resolved.
    pub fn retention_policy(&self) -> Retention {
        lock(&self.state).policy.clone()
    }

    /// What is wrong with a config file or variable, as last looked at.
    pub fn config_error(&self) -> Option<String> {
        lock(&self.state).error.clone()
    }

    /// Looks at the config files again and, when what they hold changed,
    /// resolves the settings of the project at `root` anew.
    pub fn refresh(&self, user: &UserSettings, root: &Path) -> Refreshed {
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
        let mut file = lock(&self.file);
        let project_changed = file.refresh();
        let mut state = lock(&self.state);
        if !project_changed && state.user_gen == Some(user_gen) {
            return Refreshed {
                settings: Arc::clone(&state.settings),
                changed: false,
                first: false,
            };
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
            tracing::warn!(root = %root.display(), "config: {e}; the last good settings stay");
        }
        let changed = first || state.settings != settings;
        state.settings = Arc::clone(&settings);
        state.policy = Retention {
            keep_turns: settings.retention_turns() as usize,
            max_age_secs: settings.retention_days().saturating_mul(24 * 3600),
            grace_secs: user.grace_secs,
            budget_bytes: settings.store_budget_bytes(),
        };
        Refreshed {
            settings,
            changed,
            first,
        }
    }
}
