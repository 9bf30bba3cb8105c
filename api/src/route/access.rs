//! The kinds of access a route can declare.

use std::net::IpAddr;

use platform::{CredentialKind, Feature, PanelAuth, Permission, Right, Secret, UserAuth};
use schemas::ErrorCode;

use super::{Access, AccessDoc, Admitted, CallMeta, Credential, Params};
use crate::limits::RateKey;
use crate::{ApiError, ApiResult, AppState};

fn secret(credential: Option<&str>) -> ApiResult<Secret> {
    let Some(raw) = credential else {
        return Err(ApiError::with_description(
            ErrorCode::WrongHash,
            "Wrong hash: the call needs `hash` (body, query or `Authorization: NVX <hash>`)",
        ));
    };
    Secret::parse(raw.trim()).ok_or_else(|| {
        ApiError::with_description(
            ErrorCode::WrongHash,
            "Wrong hash: `hash` must be 32 hexadecimal characters",
        )
    })
}

/// Resolves a credential; a failure also counts against the client's address,
/// so that guessing credentials is rate-limited like guessing passwords.
async fn resolve<T, Fut>(
    state: &AppState,
    meta: &CallMeta,
    lookup: impl FnOnce(Secret) -> Fut,
) -> ApiResult<T>
where
    Fut: std::future::Future<Output = platform::Result<T>>,
{
    let outcome = match secret(meta.credential.as_deref()) {
        Ok(secret) => lookup(secret).await.map_err(ApiError::from),
        Err(err) => Err(err),
    };
    if outcome.is_err() {
        state.inner.limits.check(&RateKey::Ip(meta.client_ip))?;
    }
    outcome
}

fn user_rate_key(auth: &UserAuth, meta: &CallMeta) -> RateKey {
    match auth.kind {
        CredentialKind::ApiKey { key_id } => RateKey::ApiKey(key_id),
        // Sessions are counted by digest, so the limiter holds no usable secret.
        CredentialKind::Session => RateKey::UserSession(
            meta.credential
                .as_deref()
                .and_then(|c| Secret::parse(c.trim()))
                .map(|s| s.digest())
                .unwrap_or_default(),
        ),
    }
}

/// No credential (logins); rate-limited per client address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Public;

impl Access for Public {
    type Caller = IpAddr;

    fn doc(&self) -> AccessDoc {
        AccessDoc {
            credential: Credential::None,
            codes: vec![ErrorCode::TooManyRequests],
        }
    }

    async fn admit(&self, state: &AppState, meta: CallMeta) -> ApiResult<Admitted<IpAddr>> {
        state.inner.limits.check(&RateKey::Ip(meta.client_ip))?;
        Ok(Admitted {
            caller: meta.client_ip,
            deprecated: false,
        })
    }
}

/// A user session from login and password; API keys are refused with 4.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Session {
    master_only: bool,
}

impl Session {
    /// Master users only: a sub-user's session is refused with 13 (API key management).
    pub(crate) const fn master() -> Self {
        Self { master_only: true }
    }

    /// Any user's session, sub-users included (logout).
    pub(crate) const fn any() -> Self {
        Self { master_only: false }
    }
}

/// What any check of a user credential can refuse with.
const USER_CREDENTIAL_CODES: [ErrorCode; 5] = [
    ErrorCode::WrongHash,
    ErrorCode::CredentialNotFound,
    ErrorCode::AccessDenied,
    ErrorCode::UserNotActivated,
    ErrorCode::TooManyRequests,
];

impl Access for Session {
    type Caller = (UserAuth, Secret);

    fn doc(&self) -> AccessDoc {
        let mut codes = USER_CREDENTIAL_CODES.to_vec();
        if self.master_only {
            codes.push(ErrorCode::OperationNotPermitted);
        }
        AccessDoc {
            credential: Credential::UserSession,
            codes,
        }
    }

    async fn admit(
        &self,
        state: &AppState,
        meta: CallMeta,
    ) -> ApiResult<Admitted<(UserAuth, Secret)>> {
        let (auth, secret) = resolve(state, &meta, |secret| async move {
            let auth = state.inner.store.authenticate_user(&secret).await?;
            Ok((auth, secret))
        })
        .await?;
        if auth.kind != CredentialKind::Session {
            // A refusal counts against the address, as a failed credential does.
            state.inner.limits.check(&RateKey::Ip(meta.client_ip))?;
            return Err(ApiError::with_description(
                ErrorCode::CredentialNotFound,
                "User or API key not found or session ended: this call needs a session from login and password, not an API key",
            ));
        }
        state.inner.limits.check(&user_rate_key(&auth, &meta))?;
        if self.master_only && auth.is_subuser() {
            return Err(ApiError::with_description(
                ErrorCode::OperationNotPermitted,
                "Operation not permitted: only the master user may manage API keys",
            ));
        }
        Ok(Admitted {
            caller: (auth, secret),
            deprecated: false,
        })
    }
}

/// Which trackers must hold a route's plan feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FeatureScope {
    /// Every live tracker of the account.
    AllTrackers,
    /// The trackers the parameters name ([`Params::trackers`]).
    NamedTrackers,
}

/// An account call: an API key, or a user session (deprecated, announced by a
/// `Deprecation: true` header, refused with 276 when switched off).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct User {
    right: Option<Right>,
    feature: Option<(Feature, FeatureScope)>,
}

impl User {
    /// A call any user of the account may make (sub-users within their scope).
    pub(crate) const fn any() -> Self {
        Self {
            right: None,
            feature: None,
        }
    }

    /// A call that needs a sub-user right (master users hold all rights).
    pub(crate) const fn needs(right: Right) -> Self {
        Self {
            right: Some(right),
            feature: None,
        }
    }

    /// Also needs a plan feature on the trackers of `scope`.
    pub(crate) const fn feature(self, feature: Feature, scope: FeatureScope) -> Self {
        Self {
            feature: Some((feature, scope)),
            ..self
        }
    }
}

impl Access for User {
    type Caller = UserAuth;

    fn doc(&self) -> AccessDoc {
        let mut codes = USER_CREDENTIAL_CODES.to_vec();
        codes.push(ErrorCode::ForbiddenForSessionType);
        if self.right.is_some() {
            codes.push(ErrorCode::OperationNotPermitted);
        }
        if self.feature.is_some() {
            codes.push(ErrorCode::FeatureUnavailable);
        }
        AccessDoc {
            credential: Credential::ApiKey,
            codes,
        }
    }

    async fn admit(&self, state: &AppState, meta: CallMeta) -> ApiResult<Admitted<UserAuth>> {
        let auth = resolve(state, &meta, |secret| async move {
            state.inner.store.authenticate_user(&secret).await
        })
        .await?;
        let deprecated = auth.kind == CredentialKind::Session;
        if deprecated && !state.inner.config.allow_session_auth {
            state.inner.limits.check(&RateKey::Ip(meta.client_ip))?;
            return Err(ApiError::with_description(
                ErrorCode::ForbiddenForSessionType,
                "Action is forbidden for received session type: use an API key; user session hashes are accepted only for API key management",
            ));
        }
        state.inner.limits.check(&user_rate_key(&auth, &meta))?;
        if let Some(right) = self.right {
            if !state.inner.store.has_right(&auth, right).await? {
                return Err(ApiError::with_description(
                    ErrorCode::OperationNotPermitted,
                    format!("Operation not permitted: the call needs the right `{right}`"),
                ));
            }
        }
        Ok(Admitted {
            caller: auth,
            deprecated,
        })
    }

    async fn check_params<P: Params>(
        &self,
        state: &AppState,
        caller: &UserAuth,
        params: &P,
    ) -> ApiResult<()> {
        let Some((feature, scope)) = self.feature else {
            return Ok(());
        };
        let named;
        let trackers = match scope {
            FeatureScope::AllTrackers => None,
            FeatureScope::NamedTrackers => {
                named = params.trackers();
                Some(named.as_slice())
            }
        };
        let lacking = state
            .inner
            .store
            .trackers_lacking(caller, feature, trackers)
            .await?;
        if let Some(first) = lacking.first() {
            return Err(ApiError::with_description(
                ErrorCode::FeatureUnavailable,
                format!(
                    "Feature unavailable due to tariff restrictions: the plan of tracker {first} lacks `{feature}`"
                ),
            ));
        }
        Ok(())
    }
}

/// A dealer panel call and the permissions it needs (one, or two).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Panel {
    permissions: [Option<Permission>; 2],
}

impl Panel {
    /// A panel call any panel session may make.
    pub(crate) const fn any() -> Self {
        Self {
            permissions: [None, None],
        }
    }

    /// A panel call that needs a permission.
    pub(crate) const fn needs(permission: Permission) -> Self {
        Self {
            permissions: [Some(permission), None],
        }
    }

    /// ... and another one too (`activation_code: read` and `create`).
    pub(crate) const fn and(self, permission: Permission) -> Self {
        Self {
            permissions: [self.permissions[0], Some(permission)],
        }
    }
}

impl Access for Panel {
    type Caller = (PanelAuth, Secret);

    fn doc(&self) -> AccessDoc {
        let mut codes = vec![
            ErrorCode::WrongHash,
            ErrorCode::CredentialNotFound,
            ErrorCode::AccessDenied,
            ErrorCode::TooManyRequests,
        ];
        if self.permissions.iter().any(Option::is_some) {
            codes.push(ErrorCode::OperationNotPermitted);
        }
        AccessDoc {
            credential: Credential::PanelSession,
            codes,
        }
    }

    async fn admit(
        &self,
        state: &AppState,
        meta: CallMeta,
    ) -> ApiResult<Admitted<(PanelAuth, Secret)>> {
        let (auth, secret) = resolve(state, &meta, |secret| async move {
            let auth = state.inner.store.authenticate_panel(&secret).await?;
            Ok((auth, secret))
        })
        .await?;
        state
            .inner
            .limits
            .check(&RateKey::PanelDealer(auth.dealer_id))?;
        for permission in self.permissions.into_iter().flatten() {
            if !auth.has(permission) {
                return Err(ApiError::with_description(
                    ErrorCode::OperationNotPermitted,
                    format!(
                        "Operation not permitted: the call needs the panel permission `{}: {}`",
                        permission.group(),
                        permission.name()
                    ),
                ));
            }
        }
        Ok(Admitted {
            caller: (auth, secret),
            deprecated: false,
        })
    }
}
