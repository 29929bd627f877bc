//! The 18 providers as data: endpoints, default scopes, PKCE, client authentication, and where
//! the profile comes from (PROVIDERS.md §3.2). Everything odd about one provider is a field
//! here or a branch of `profile.rs`, never a copy of the flow.

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `client_id` and `client_secret` in the form body (`client_secret_post`).
    Body,
    /// HTTP Basic with the form-url-encoded id and secret (RFC 6749 §2.3.1).
    Basic,
    /// TikTok: `client_key` and `client_secret` in the body, no `client_id`.
    ClientKey,
}

/// Where a provider's profile comes from after the code exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileSource {
    /// The claims of the `id_token` in the token response, verified like a client's id
    /// token (signature by the provider's key set, issuer, audience, age, the flow's nonce).
    IdToken,
    /// `GET user_info_endpoint` with the access token as Bearer.
    Get,
    /// `POST user_info_endpoint` without a body (Dropbox).
    PostEmpty,
    /// `POST user_info_endpoint` with the form `access_token`, `client_id` (VK).
    PostForm,
}

/// One provider's description.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub id: &'static str,
    pub name: &'static str,
    pub authorization_endpoint: &'static str,
    pub token_endpoint: &'static str,
    /// The profile endpoint ("" when the profile is the id token).
    pub user_info_endpoint: &'static str,
    /// A second endpoint some providers need: GitHub's e-mail list, Facebook's `debug_token`,
    /// Twitter's confirmed-email query, Microsoft's Graph photo.
    pub extra_endpoint: &'static str,
    pub scopes: &'static [&'static str],
    /// How scopes are joined in the authorize URL.
    pub scope_separator: &'static str,
    /// A `code_challenge` (S256) goes on the authorize URL.
    pub pkce: bool,
    /// A `code_verifier` goes in the token request (also TikTok's, without a challenge).
    pub sends_verifier: bool,
    pub client_auth: ClientAuth,
    /// `login_hint` is passed on.
    pub login_hint: bool,
    /// Fixed parameters of the authorize URL.
    pub authorize_params: &'static [(&'static str, &'static str)],
    pub response_type: &'static str,
    pub profile: ProfileSource,
    pub refresh: bool,
    /// The issuer an id token of this provider must carry (OIDC providers).
    pub issuer: &'static str,
    pub jwks_uri: &'static str,
    /// `POST /sign-in/social` with an `idToken` minted by the provider is supported.
    pub id_token_sign_in: bool,
}

const fn spec(id: &'static str, name: &'static str) -> Spec {
    Spec {
        id,
        name,
        authorization_endpoint: "",
        token_endpoint: "",
        user_info_endpoint: "",
        extra_endpoint: "",
        scopes: &[],
        scope_separator: " ",
        pkce: false,
        sends_verifier: false,
        client_auth: ClientAuth::Body,
        login_hint: false,
        authorize_params: &[],
        response_type: "code",
        profile: ProfileSource::Get,
        refresh: true,
        issuer: "",
        jwks_uri: "",
        id_token_sign_in: false,
    }
}

const TWITCH_CLAIMS: &str =
    r#"{"id_token":{"email":null,"email_verified":null,"preferred_username":null,"picture":null}}"#;

/// Every provider Gatehouse knows, by id.
pub const PROVIDERS: &[Spec] = &[
    Spec {
        authorization_endpoint: "https://appleid.apple.com/auth/authorize",
        token_endpoint: "https://appleid.apple.com/auth/token",
        scopes: &["email", "name"],
        pkce: true,
        sends_verifier: true,
        authorize_params: &[("response_mode", "form_post")],
        response_type: "code id_token",
        profile: ProfileSource::IdToken,
        issuer: "https://appleid.apple.com",
        jwks_uri: "https://appleid.apple.com/auth/keys",
        id_token_sign_in: true,
        ..spec("apple", "Apple")
    },
    Spec {
        authorization_endpoint: "https://discord.com/api/oauth2/authorize",
        token_endpoint: "https://discord.com/api/oauth2/token",
        user_info_endpoint: "https://discord.com/api/users/@me",
        scopes: &["identify", "email"],
        authorize_params: &[("prompt", "none")],
        ..spec("discord", "Discord")
    },
    Spec {
        authorization_endpoint: "https://www.facebook.com/v24.0/dialog/oauth",
        token_endpoint: "https://graph.facebook.com/v24.0/oauth/access_token",
        user_info_endpoint: "https://graph.facebook.com/me?fields=id,name,email,picture",
        extra_endpoint: "https://graph.facebook.com/debug_token",
        scopes: &["email", "public_profile"],
        login_hint: true,
        issuer: "https://www.facebook.com",
        jwks_uri: "https://limited.facebook.com/.well-known/oauth/openid/jwks/",
        id_token_sign_in: true,
        ..spec("facebook", "Facebook")
    },
    Spec {
        authorization_endpoint: "https://github.com/login/oauth/authorize",
        token_endpoint: "https://github.com/login/oauth/access_token",
        user_info_endpoint: "https://api.github.com/user",
        extra_endpoint: "https://api.github.com/user/emails",
        scopes: &["read:user", "user:email"],
        pkce: true,
        sends_verifier: true,
        login_hint: true,
        ..spec("github", "GitHub")
    },
    Spec {
        authorization_endpoint: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
        token_endpoint: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
        extra_endpoint: "https://graph.microsoft.com/v1.0/me/photos/48x48/$value",
        scopes: &["openid", "profile", "email", "User.Read", "offline_access"],
        pkce: true,
        sends_verifier: true,
        login_hint: true,
        profile: ProfileSource::IdToken,
        jwks_uri: "https://login.microsoftonline.com/common/discovery/v2.0/keys",
        id_token_sign_in: true,
        ..spec("microsoft", "Microsoft")
    },
    Spec {
        authorization_endpoint: "https://accounts.google.com/o/oauth2/v2/auth",
        token_endpoint: "https://oauth2.googleapis.com/token",
        scopes: &["email", "profile", "openid"],
        pkce: true,
        sends_verifier: true,
        login_hint: true,
        authorize_params: &[("include_granted_scopes", "true")],
        profile: ProfileSource::IdToken,
        issuer: "https://accounts.google.com",
        jwks_uri: "https://www.googleapis.com/oauth2/v3/certs",
        id_token_sign_in: true,
        ..spec("google", "Google")
    },
    Spec {
        authorization_endpoint: "https://accounts.spotify.com/authorize",
        token_endpoint: "https://accounts.spotify.com/api/token",
        user_info_endpoint: "https://api.spotify.com/v1/me",
        scopes: &["user-read-email"],
        pkce: true,
        sends_verifier: true,
        ..spec("spotify", "Spotify")
    },
    Spec {
        authorization_endpoint: "https://id.twitch.tv/oauth2/authorize",
        token_endpoint: "https://id.twitch.tv/oauth2/token",
        scopes: &["user:read:email", "openid"],
        authorize_params: &[("claims", TWITCH_CLAIMS)],
        profile: ProfileSource::IdToken,
        issuer: "https://id.twitch.tv/oauth2",
        jwks_uri: "https://id.twitch.tv/oauth2/keys",
        ..spec("twitch", "Twitch")
    },
    Spec {
        authorization_endpoint: "https://x.com/i/oauth2/authorize",
        token_endpoint: "https://api.x.com/2/oauth2/token",
        user_info_endpoint: "https://api.x.com/2/users/me?user.fields=profile_image_url",
        extra_endpoint: "https://api.x.com/2/users/me?user.fields=confirmed_email",
        scopes: &["users.read", "tweet.read", "offline.access", "users.email"],
        pkce: true,
        sends_verifier: true,
        client_auth: ClientAuth::Basic,
        ..spec("twitter", "X (Twitter)")
    },
    Spec {
        authorization_endpoint: "https://www.dropbox.com/oauth2/authorize",
        token_endpoint: "https://api.dropboxapi.com/oauth2/token",
        user_info_endpoint: "https://api.dropboxapi.com/2/users/get_current_account",
        scopes: &["account_info.read"],
        pkce: true,
        sends_verifier: true,
        profile: ProfileSource::PostEmpty,
        ..spec("dropbox", "Dropbox")
    },
    Spec {
        authorization_endpoint: "https://id.kick.com/oauth/authorize",
        token_endpoint: "https://id.kick.com/oauth/token",
        user_info_endpoint: "https://api.kick.com/public/v1/users",
        scopes: &["user:read"],
        pkce: true,
        sends_verifier: true,
        ..spec("kick", "Kick")
    },
    Spec {
        authorization_endpoint: "https://www.linkedin.com/oauth/v2/authorization",
        token_endpoint: "https://www.linkedin.com/oauth/v2/accessToken",
        user_info_endpoint: "https://api.linkedin.com/v2/userinfo",
        scopes: &["profile", "email", "openid"],
        login_hint: true,
        ..spec("linkedin", "LinkedIn")
    },
    Spec {
        authorization_endpoint: "https://gitlab.com/oauth/authorize",
        token_endpoint: "https://gitlab.com/oauth/token",
        user_info_endpoint: "https://gitlab.com/api/v4/user",
        scopes: &["read_user"],
        pkce: true,
        sends_verifier: true,
        login_hint: true,
        ..spec("gitlab", "GitLab")
    },
    Spec {
        authorization_endpoint: "https://www.tiktok.com/v2/auth/authorize",
        token_endpoint: "https://open.tiktokapis.com/v2/oauth/token/",
        user_info_endpoint: "https://open.tiktokapis.com/v2/user/info/?fields=open_id,avatar_large_url,display_name,username",
        scopes: &["user.info.profile"],
        scope_separator: ",",
        sends_verifier: true,
        client_auth: ClientAuth::ClientKey,
        ..spec("tiktok", "TikTok")
    },
    Spec {
        authorization_endpoint: "https://www.reddit.com/api/v1/authorize",
        token_endpoint: "https://www.reddit.com/api/v1/access_token",
        user_info_endpoint: "https://oauth.reddit.com/api/v1/me",
        scopes: &["identity"],
        client_auth: ClientAuth::Basic,
        authorize_params: &[("duration", "permanent")],
        ..spec("reddit", "Reddit")
    },
    Spec {
        authorization_endpoint: "https://apis.roblox.com/oauth/v1/authorize",
        token_endpoint: "https://apis.roblox.com/oauth/v1/token",
        user_info_endpoint: "https://apis.roblox.com/oauth/v1/userinfo",
        scopes: &["openid", "profile"],
        authorize_params: &[("prompt", "select_account consent")],
        ..spec("roblox", "Roblox")
    },
    Spec {
        authorization_endpoint: "https://id.vk.com/authorize",
        token_endpoint: "https://id.vk.com/oauth2/auth",
        user_info_endpoint: "https://id.vk.com/oauth2/user_info",
        scopes: &["email", "phone"],
        pkce: true,
        sends_verifier: true,
        profile: ProfileSource::PostForm,
        ..spec("vk", "VK")
    },
    Spec {
        authorization_endpoint: "https://zoom.us/oauth/authorize",
        token_endpoint: "https://zoom.us/oauth/token",
        user_info_endpoint: "https://api.zoom.us/v2/users/me",
        pkce: true,
        sends_verifier: true,
        ..spec("zoom", "Zoom")
    },
];

/// The provider with this id.
pub fn find(id: &str) -> Option<&'static Spec> {
    PROVIDERS.iter().find(|p| p.id == id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn eighteen_providers_with_their_endpoints() {
        assert_eq!(super::PROVIDERS.len(), 18);
        for p in super::PROVIDERS {
            assert!(p.authorization_endpoint.starts_with("https://"), "{}", p.id);
            assert!(p.token_endpoint.starts_with("https://"), "{}", p.id);
            let profile_from_token = p.profile == super::ProfileSource::IdToken;
            assert_eq!(
                p.user_info_endpoint.is_empty(),
                profile_from_token,
                "{}",
                p.id
            );
        }
    }
}
