//! Social sign-in (better-auth's social providers): the authorization-code flow, id-token
//! sign-in and account linking (`flow.rs`), the provider tokens of linked accounts
//! (`provider_tokens.rs`), and the 18 providers themselves (`providers/`: the catalogue, their
//! profiles, id tokens and token endpoint).
mod flow;
mod provider_tokens;
pub mod providers;
mod service;
mod workflow;

pub use service::{SocialFlow, SocialFlowInner};

pub use flow::SocialApi;
pub use provider_tokens::ProviderTokenApi;

/// The social plugin's operations.
pub type Apis = (SocialApi, ProviderTokenApi);

pub fn apis() -> Apis {
    (SocialApi, ProviderTokenApi)
}
