//! The social plugin's service: the provider flows (authorization code, id token, linking)
//! and the provider tokens of linked accounts, with what they need named here.
use crate::audit::Audit;
use crate::config::Config;
use crate::delivery::Mail;
use crate::http::CookieNames;
use crate::links::Links;
use crate::plugins::core::AccountMail;
use crate::session::Sessions;
use std::sync::Arc;

/// The social flows and provider tokens. Cheap to clone.
#[derive(Clone)]
pub struct SocialFlow(Arc<SocialFlowInner>);

pub struct SocialFlowInner {
    pub(crate) config: Arc<Config>,
    /// The configured providers.
    pub social: super::providers::Social,
    pub(crate) audit: Audit,
    pub(crate) sessions: Sessions,
    pub(crate) mail: Mail,
    pub(crate) account_mail: AccountMail,
    pub(crate) links: Links,
    pub(crate) cookies: CookieNames,
    pub(crate) origins: crate::http::TrustedOrigins,
    pub(crate) signer: crate::crypto::Signer,
    pub(crate) clock: Arc<dyn storage::Clock>,
    pub(crate) actors: actors::Actors,
    pub(crate) reader: actors::Reader,
    /// A user with two-factor sign-in on finishes a social sign-in with the second step.
    pub(crate) two_factor: crate::plugins::two_factor::TwoFactorFlow,
}

impl std::ops::Deref for SocialFlow {
    type Target = SocialFlowInner;
    fn deref(&self) -> &SocialFlowInner {
        &self.0
    }
}

impl SocialFlow {
    pub fn new(inner: SocialFlowInner) -> Self {
        Self(Arc::new(inner))
    }
}
