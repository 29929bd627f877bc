//! The passkey plugin's routes (@better-auth/passkey): registering a passkey from a signed-in
//! session, signing in with one alone (discoverable credentials, the browser's autofill), and
//! the list, rename and delete of the account page. The ceremonies are in `service.rs`; each
//! change is written once by the user's actor (`actors/src/user/passkeys.rs`).
mod ed25519;
mod service;

pub use service::PasskeyFlow;

/// The passkey plugin's operations.
pub type Apis = PasskeyApi;

pub fn apis() -> Apis {
    PasskeyApi
}

use crate::audit::{action, Event, Origin};
use crate::dto::{iso, SessionDto, StatusResponse, Text, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::plugins::Tag;
use crate::session::{Principal, ResolveOptions};
use crate::AppState;
use poem::web::Data;
use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Enum, Object, OpenApi};
use service::{ALGORITHMS, TIMEOUT_MS};
use storage::{Passkey, PasskeyId};

pub struct PasskeyApi;

/// A passkey as better-auth's client lists it (`lastUsedAt` is a Gatehouse addition).
#[derive(Debug, Object)]
#[oai(rename = "Passkey", rename_all = "camelCase")]
struct PasskeyDto {
    id: String,
    name: Option<String>,
    /// The COSE public key, base64.
    public_key: String,
    user_id: String,
    #[oai(rename = "credentialID")]
    credential_id: String,
    counter: u32,
    /// `singleDevice` or `multiDevice` (synced between devices).
    device_type: String,
    backed_up: bool,
    transports: String,
    /// ISO 8601 date-time.
    created_at: String,
    aaguid: String,
    /// ISO 8601 date-time of the last sign-in with it.
    last_used_at: Option<String>,
}

impl From<&Passkey> for PasskeyDto {
    fn from(p: &Passkey) -> Self {
        Self {
            id: p.id.0.clone(),
            name: p.name.clone(),
            public_key: p.public_key.clone(),
            user_id: p.user_id.0.clone(),
            credential_id: p.credential_id.clone(),
            counter: p.counter,
            device_type: p.device_type.clone(),
            backed_up: p.backed_up,
            transports: p.transports.clone(),
            created_at: iso(&p.created_at),
            aaguid: p.aaguid.clone(),
            last_used_at: p.last_used_at.as_ref().map(iso),
        }
    }
}

#[derive(Debug, Enum)]
#[oai(rename = "AuthenticatorAttachment", rename_all = "kebab-case")]
enum Attachment {
    Platform,
    CrossPlatform,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyRelyingParty")]
struct RelyingParty {
    name: String,
    id: String,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyUserEntity", rename_all = "camelCase")]
struct UserEntity {
    /// The user handle, base64url (not the user's id).
    id: String,
    name: String,
    display_name: String,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyCredentialParam")]
struct CredentialParam {
    alg: i64,
    #[oai(rename = "type")]
    type_: String,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyCredentialDescriptor")]
struct Descriptor {
    /// The credential id, base64url.
    id: String,
    #[oai(rename = "type")]
    type_: String,
    #[oai(skip_serializing_if_is_none)]
    transports: Option<Vec<String>>,
}

impl From<&Passkey> for Descriptor {
    fn from(p: &Passkey) -> Self {
        Self {
            id: p.credential_id.clone(),
            type_: "public-key".into(),
            transports: (!p.transports.is_empty())
                .then(|| p.transports.split(',').map(str::to_owned).collect()),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyAuthenticatorSelection", rename_all = "camelCase")]
struct Selection {
    resident_key: String,
    user_verification: String,
    #[oai(skip_serializing_if_is_none)]
    authenticator_attachment: Option<Attachment>,
    require_resident_key: bool,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyExtensions", rename_all = "camelCase")]
struct Extensions {
    cred_props: bool,
}

/// What `navigator.credentials.create` takes.
#[derive(Debug, Object)]
#[oai(rename = "PasskeyRegistrationOptions", rename_all = "camelCase")]
struct RegistrationOptions {
    /// base64url.
    challenge: String,
    rp: RelyingParty,
    user: UserEntity,
    pub_key_cred_params: Vec<CredentialParam>,
    /// Milliseconds.
    timeout: u32,
    attestation: String,
    /// The user's passkeys: an authenticator holding one of them is not registered twice.
    exclude_credentials: Vec<Descriptor>,
    authenticator_selection: Selection,
    extensions: Extensions,
    hints: Vec<String>,
}

/// What `navigator.credentials.get` takes.
#[derive(Debug, Object)]
#[oai(rename = "PasskeyAuthenticationOptions", rename_all = "camelCase")]
struct AuthenticationOptions {
    rp_id: String,
    /// base64url.
    challenge: String,
    /// Milliseconds.
    timeout: u32,
    user_verification: String,
    /// Signed in: that user's passkeys only. Absent: any passkey the authenticator holds
    /// for this site (a discoverable credential).
    #[oai(skip_serializing_if_is_none)]
    allow_credentials: Option<Vec<Descriptor>>,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyVerifyRegistrationBody", rename_all = "camelCase")]
struct VerifyRegistrationBody {
    /// The browser's `PublicKeyCredential` from `navigator.credentials.create`, as JSON.
    response: serde_json::Value,
    #[oai(validator(max_length = 128))]
    name: Option<Text>,
    /// Not offered: a passkey is registered from a signed-in session.
    create_session: Option<bool>,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyVerifyAuthenticationBody")]
struct VerifyAuthenticationBody {
    /// The browser's `PublicKeyCredential` from `navigator.credentials.get`, as JSON.
    response: serde_json::Value,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeySignedIn")]
struct SignedIn {
    session: SessionDto,
    user: UserDto,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyUpdateBody")]
struct UpdateBody {
    #[oai(validator(max_length = 64))]
    id: String,
    #[oai(validator(max_length = 128))]
    name: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyUpdated")]
struct Updated {
    passkey: PasskeyDto,
}

#[derive(Debug, Object)]
#[oai(rename = "PasskeyIdBody")]
struct IdBody {
    #[oai(validator(max_length = 64))]
    id: String,
}

fn event(p: &Principal, req: &Request, action: &'static str) -> Event {
    Event::new(action, &Origin::of(req))
        .own(&p.user.id)
        .impersonated_by(p.session.impersonated_by.as_ref())
}

/// A passkey is registered by its owner, not by an administrator acting as them.
fn not_impersonating(p: &Principal) -> ApiResult<()> {
    match p.session.impersonated_by {
        Some(_) => Err(Code::NotAllowedToRegisterPasskey.into()),
        None => Ok(()),
    }
}

#[OpenApi(prefix_path = "/passkey", tag = "Tag::Passkey")]
impl PasskeyApi {
    /// Options to register a passkey
    ///
    /// For the signed-in user, from a fresh session: the options for
    /// `navigator.credentials.create` (relying party: the base URL's host) and a challenge
    /// valid once for 5 minutes, named by a signed cookie.
    #[oai(
        path = "/generate-register-options",
        method = "get",
        operation_id = "passkeyGenerateRegisterOptions"
    )]
    async fn generate_register_options(
        &self,
        state: Data<&AppState>,
        auth: Principal,
        #[oai(name = "authenticatorAttachment")] attachment: Query<Option<Attachment>>,
        #[oai(validator(max_length = 128))] name: Query<Option<String>>,
    ) -> ApiResult<Json<RegistrationOptions>> {
        state.sessions.require_fresh(&auth.session)?;
        not_impersonating(&auth)?;
        let name = name
            .0
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| auth.user.email.clone());
        let attachment = attachment.0;
        let wire = attachment.as_ref().map(|a| match a {
            Attachment::Platform => "platform",
            Attachment::CrossPlatform => "cross-platform",
        });
        let flow = &state.passkeys;
        let o = flow
            .start_registration(&auth.user, &name, wire, &auth.cookies)
            .await?;
        Ok(Json(RegistrationOptions {
            challenge: o.challenge,
            rp: RelyingParty {
                name: flow.rp_name().to_owned(),
                id: flow.rp_id().to_owned(),
            },
            user: UserEntity {
                id: o.user_handle,
                name,
                display_name: auth.user.email.clone(),
            },
            pub_key_cred_params: ALGORITHMS
                .iter()
                .map(|&alg| CredentialParam {
                    alg: alg as i64,
                    type_: "public-key".into(),
                })
                .collect(),
            timeout: TIMEOUT_MS,
            attestation: "none".into(),
            exclude_credentials: o.exclude.iter().map(Descriptor::from).collect(),
            authenticator_selection: Selection {
                resident_key: "preferred".into(),
                user_verification: "preferred".into(),
                authenticator_attachment: attachment,
                require_resident_key: false,
            },
            extensions: Extensions { cred_props: true },
            hints: Vec::new(),
        }))
    }

    /// Register a passkey
    ///
    /// The browser's answer to the registration options: checked (challenge, origin,
    /// relying party, signature) and stored. The challenge works once, whatever the outcome.
    #[oai(
        path = "/verify-registration",
        method = "post",
        operation_id = "passkeyVerifyRegistration"
    )]
    async fn verify_registration(
        &self,
        state: Data<&AppState>,
        req: &Request,
        auth: Principal,
        body: Json<VerifyRegistrationBody>,
    ) -> ApiResult<Json<PasskeyDto>> {
        state.sessions.require_fresh(&auth.session)?;
        not_impersonating(&auth)?;
        let body = body.0;
        let _ = body.create_session;
        credential_json(&body.response)?;
        let passkey = state
            .passkeys
            .finish_registration(req, &auth.user, body.response, body.name.map(|n| n.0))
            .await?;
        let ev = event(&auth, req, action::PASSKEY_REGISTERED).detail("passkey", &*passkey.id.0);
        let passkey = state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noted(ev))
            .register_passkey(passkey)
            .await?;
        Ok(Json(PasskeyDto::from(&passkey)))
    }

    /// Options to sign in with a passkey
    ///
    /// No session needed: the options for `navigator.credentials.get` (any passkey of this
    /// site, so the browser can offer them, autofill included); signed in, only the user's
    /// own passkeys. A challenge valid once for 5 minutes, named by a signed cookie.
    #[oai(
        path = "/generate-authenticate-options",
        method = "get",
        operation_id = "passkeyGenerateAuthenticateOptions"
    )]
    async fn generate_authenticate_options(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
    ) -> ApiResult<Json<AuthenticationOptions>> {
        let authed = state
            .sessions
            .resolve_session(req, cookies, ResolveOptions::default())
            .await?;
        let flow = &state.passkeys;
        let (challenge, allowed) = flow
            .start_authentication(authed.as_ref().map(|a| &a.user), cookies)
            .await?;
        Ok(Json(AuthenticationOptions {
            rp_id: flow.rp_id().to_owned(),
            challenge,
            timeout: TIMEOUT_MS,
            user_verification: "preferred".into(),
            allow_credentials: (!allowed.is_empty())
                .then(|| allowed.iter().map(Descriptor::from).collect()),
        }))
    }

    /// Sign in with a passkey
    ///
    /// The browser's answer to the sign-in options: checked (challenge, origin, relying
    /// party, signature, the counter never going back) and a session made — no second
    /// factor asked (a passkey is one). An unknown or deleted passkey answers 401
    /// `PASSKEY_NOT_FOUND`; a bad signature or a counter gone back 401
    /// `AUTHENTICATION_FAILED` (the latter audited: the authenticator may be cloned).
    #[oai(
        path = "/verify-authentication",
        method = "post",
        operation_id = "passkeyVerifyAuthentication"
    )]
    async fn verify_authentication(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<VerifyAuthenticationBody>,
    ) -> ApiResult<Json<SignedIn>> {
        credential_json(&body.0.response)?;
        let asserted = match state.passkeys.check_assertion(req, body.0.response).await {
            Ok(a) => a,
            Err(e) => return Err(clone_audited(&state, req, e).await),
        };
        let user = asserted.user.clone();
        let ev = Event::new(action::PASSKEY_SIGN_IN, &Origin::of(req))
            .own(&user.id)
            .detail("passkey", &*asserted.used.id.0)
            .fill(actors::Fill::TargetSession);
        state
            .actors
            .user(user.id.clone())
            .use_passkey(asserted.used, asserted.expected)
            .await?;
        let authed = state
            .sessions
            .start_session(req, cookies, user, true, state.audit.noted(ev))
            .await?;
        Ok(Json(SignedIn {
            session: SessionDto::from(&authed.session),
            user: UserDto::from(&authed.user),
        }))
    }

    /// The caller's passkeys
    ///
    /// Oldest first.
    #[oai(
        path = "/list-user-passkeys",
        method = "get",
        operation_id = "passkeyListUserPasskeys"
    )]
    async fn list_user_passkeys(
        &self,
        state: Data<&AppState>,
        auth: Principal,
    ) -> ApiResult<Json<Vec<PasskeyDto>>> {
        let all = state.reader.list_passkeys(&auth.user.id).await?;
        Ok(Json(all.iter().map(PasskeyDto::from).collect()))
    }

    /// Rename a passkey
    ///
    /// One of the caller's passkeys (`PASSKEY_NOT_FOUND` for any other id).
    #[oai(
        path = "/update-passkey",
        method = "post",
        operation_id = "passkeyUpdatePasskey"
    )]
    async fn update_passkey(
        &self,
        state: Data<&AppState>,
        req: &Request,
        auth: Principal,
        body: Json<UpdateBody>,
    ) -> ApiResult<Json<Updated>> {
        let body = body.0;
        let ev = event(&auth, req, action::PASSKEY_RENAMED).detail("passkey", &*body.id);
        let passkey = state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noted(ev))
            .rename_passkey(PasskeyId(body.id), body.name.0)
            .await?;
        Ok(Json(Updated {
            passkey: PasskeyDto::from(&passkey),
        }))
    }

    /// Delete a passkey
    ///
    /// One of the caller's passkeys (`PASSKEY_NOT_FOUND` for any other id). Refused with
    /// `LAST_SIGN_IN_METHOD` when it is the only way left to sign in (no password, no
    /// linked provider, no other passkey).
    #[oai(
        path = "/delete-passkey",
        method = "post",
        operation_id = "passkeyDeletePasskey"
    )]
    async fn delete_passkey(
        &self,
        state: Data<&AppState>,
        req: &Request,
        auth: Principal,
        body: Json<IdBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        let id = body.0.id;
        let ev = event(&auth, req, action::PASSKEY_DELETED).detail("passkey", &*id);
        state
            .actors
            .user(auth.user.id.clone())
            .with(state.audit.noted(ev))
            .delete_passkey(PasskeyId(id))
            .await?;
        Ok(Json(StatusResponse { status: true }))
    }
}

/// `response` must be the browser's credential, a JSON object (1.7's validation).
fn credential_json(response: &serde_json::Value) -> ApiResult<()> {
    if response.is_object() {
        return Ok(());
    }
    let mut e = ApiError::validation(false, vec!["response: an object".into()]);
    e.message = match response {
        serde_json::Value::Null => {
            "[body.response] Invalid input: expected nonoptional, received undefined"
        }
        _ => "[body.response] Invalid input: expected record",
    }
    .into();
    Err(e)
}

/// A counter gone back is kept in the audit log before it is answered.
async fn clone_audited(state: &AppState, req: &Request, e: ApiError) -> ApiError {
    if e.code == Code::PasskeyCloned {
        let ev = Event::new(action::PASSKEY_CLONE_SUSPECTED, &Origin::of(req)).failed(e.code);
        state.audit.record_after(state.audit.noted(ev)).await;
    }
    e
}
