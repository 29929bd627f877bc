//! Social providers' client registrations and options.
use super::*;

/// One social provider's client registration and options.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SocialProviderConfig {
    /// `false` keeps the section but turns the provider off.
    pub enabled: bool,
    /// The client id (TikTok: the client key).
    pub client_id: String,
    /// The client secret. Apple: either a client-secret JWT made elsewhere, or (better) the
    /// key material below, from which Gatehouse signs a fresh one for each token request.
    pub client_secret: Option<Secret>,
    /// Apple: the team id (the secret's `iss`).
    pub team_id: Option<String>,
    /// Apple: the key id of the private key (the secret's `kid`). Microsoft: the SHA-1
    /// thumbprint of the certificate whose key is `private_key` (40 hex digits).
    pub key_id: Option<String>,
    /// Apple: the ES256 private key (PKCS#8 PEM, the `.p8` file's text). Microsoft: the RSA
    /// key of a certificate credential (PEM), which signs a client assertion
    /// (`private_key_jwt`) instead of sending a `client_secret`.
    pub private_key: Option<Secret>,
    /// Scopes added to the provider's defaults.
    pub scopes: Vec<String>,
    /// Send only `scopes`, not the provider's defaults.
    pub disable_default_scope: bool,
    /// The redirect URI registered at the provider; default `{base_url}/api/auth/callback/{id}`.
    pub redirect_uri: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub user_info_endpoint: Option<String>,
    /// The provider's second call: GitHub's e-mail list, Facebook's `debug_token`, X's
    /// confirmed-email query, Microsoft's Graph photo.
    #[serde(alias = "emails_endpoint")]
    pub extra_endpoint: Option<String>,
    /// OIDC providers: the expected issuer and the key set of id tokens.
    pub issuer: Option<String>,
    pub jwks_uri: Option<String>,
    /// Microsoft: the tenant (`common`, `organizations`, `consumers` or an id).
    pub tenant_id: Option<String>,
    /// `prompt` on the authorize URL (e.g. `select_account`).
    pub prompt: Option<String>,
    /// No new users through this provider.
    pub disable_sign_up: bool,
    /// New users only when the sign-in asked for it (`requestSignUp`).
    pub disable_implicit_sign_up: bool,
    /// Link to an existing user with the same email even when the provider did not verify it.
    pub trusted: bool,
    /// Refuse id-token sign-in and linking (`idToken` in the body) for this provider.
    pub disable_id_token_sign_in: bool,
    /// No session until the user's address is verified (users and accounts are still made
    /// and linked; a verification mail goes out on sign-up), as
    /// `email_verification.require_email_verification` for this provider only.
    pub require_email_verification: bool,
    /// Google: the Workspace domain (`hd`) users must belong to; `*` any Workspace domain.
    /// Sent on the authorize URL and required in the id token.
    pub hd: Option<String>,
    /// Each sign-in through this provider writes its name, image and email over the user's
    /// (the email only when no other user has it; placeholder addresses never).
    pub override_user_info_on_sign_in: bool,
}

impl Default for SocialProviderConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            client_id: String::new(),
            client_secret: None,
            team_id: None,
            key_id: None,
            private_key: None,
            scopes: Vec::new(),
            disable_default_scope: false,
            redirect_uri: None,
            authorization_endpoint: None,
            token_endpoint: None,
            user_info_endpoint: None,
            extra_endpoint: None,
            issuer: None,
            jwks_uri: None,
            tenant_id: None,
            prompt: None,
            disable_sign_up: false,
            disable_implicit_sign_up: false,
            trusted: false,
            disable_id_token_sign_in: false,
            require_email_verification: false,
            hd: None,
            override_user_info_on_sign_in: false,
        }
    }
}
