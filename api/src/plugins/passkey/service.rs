//! The passkey plugin's service: the relying party (webauthn-rs-core: attestation, signature,
//! counter and origin checks), its ceremonies' challenges (a single-use stored row named by a
//! signed cookie, so any process can finish what another began), and what a registration or
//! an assertion makes of a stored passkey.
use super::ed25519::{self, AuthData, Expected};
use crate::crypto::Signer;
use crate::error::{ApiError, ApiResult, Code};
use crate::http::{request_cookie, CookieNames, PendingCookies};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;
use storage::{Clock, Passkey, PasskeyId, User, UserId, Verification, VerificationId};
use webauthn_rs_core::error::WebauthnError;
use webauthn_rs_core::proto::AuthenticationState;
use webauthn_rs_core::proto::{
    AuthenticatorAttachment, COSEAlgorithm, Credential, PublicKeyCredential,
    RegisterPublicKeyCredential, RegistrationState, UserVerificationPolicy,
};
use webauthn_rs_core::WebauthnCore;

/// How long a ceremony's challenge waits (as 1.7: 5 minutes).
pub const CHALLENGE_SECS: u64 = 300;
/// What the browser is told to wait for the authenticator (as 1.7).
pub const TIMEOUT_MS: u32 = 60_000;
const PREFIX: &str = "passkey:";
/// The keys offered, in 1.7's order. Ed25519 keys are checked by [`ed25519`] (webauthn-rs
/// cannot yet), the others by webauthn-rs.
pub const ALGORITHMS: [COSEAlgorithm; 3] = [
    COSEAlgorithm::EDDSA,
    COSEAlgorithm::ES256,
    COSEAlgorithm::RS256,
];

/// The passkey service. Cheap to clone.
#[derive(Clone)]
pub struct PasskeyFlow(Arc<Inner>);

pub struct Inner {
    pub actors: actors::Actors,
    pub clock: Arc<dyn Clock>,
    pub signer: Signer,
    pub cookies: CookieNames,
    rp: WebauthnCore,
    pub rp_id: String,
    rp_id_hash: [u8; 32],
    origins: Vec<url::Url>,
    pub rp_name: String,
}

/// A ceremony waiting for the browser's answer.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Ceremony {
    Registration {
        user: String,
        state: RegistrationState,
        /// The challenge (base64url), for the Ed25519 checks.
        #[serde(default)]
        challenge: String,
    },
    Authentication {
        /// The signed-in user the options were made for (only their passkeys allowed).
        user: Option<String>,
        state: AuthenticationState,
        #[serde(default)]
        challenge: String,
    },
}

/// A registration's options, as the browser's `navigator.credentials.create` takes them.
pub struct RegisterOptions {
    pub challenge: String,
    pub user_handle: String,
    pub exclude: Vec<Passkey>,
}

/// An assertion checked: the passkey as it is to be stored after this use, the version it
/// was checked against, and its user.
pub struct Asserted {
    pub used: Passkey,
    pub expected: u64,
    pub user: User,
}

impl PasskeyFlow {
    /// The relying party of `base_url` (its host is the RP id), answering to it and to the
    /// trusted `origins`.
    pub fn new(
        actors: actors::Actors,
        clock: Arc<dyn Clock>,
        signer: Signer,
        cookies: CookieNames,
        base_url: &str,
        origins: &[String],
        rp_name: &str,
    ) -> Result<Self, String> {
        let base = url::Url::parse(base_url).map_err(|e| format!("base_url: {e}"))?;
        let rp_id = base
            .host_str()
            .ok_or("base_url has no host: passkeys need one")?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let mut allowed = vec![base.clone()];
        allowed.extend(origins.iter().filter_map(|o| url::Url::parse(o).ok()));
        let rp = WebauthnCore::new_unsafe_experts_only(
            rp_name,
            &rp_id,
            allowed.clone(),
            Duration::from_millis(TIMEOUT_MS as u64),
            None,
            None,
        );
        Ok(Self(Arc::new(Inner {
            actors,
            clock,
            signer,
            cookies,
            rp,
            rp_id_hash: Sha256::digest(rp_id.as_bytes()).into(),
            rp_id,
            origins: allowed,
            rp_name: rp_name.to_owned(),
        })))
    }

    pub fn rp_id(&self) -> &str {
        &self.0.rp_id
    }

    pub fn rp_name(&self) -> &str {
        &self.0.rp_name
    }

    /// The WebAuthn user handle of `user`: stable (an authenticator keeps one passkey per
    /// account), and not the user's id.
    pub fn user_handle(&self, user: &UserId) -> Vec<u8> {
        let mac = self.0.signer.signature(&format!("passkey-user:{}", user.0));
        mac.as_bytes().iter().take(32).copied().collect()
    }

    /// Starts a registration for `user`: the challenge row and its cookie.
    pub async fn start_registration(
        &self,
        user: &User,
        name: &str,
        attachment: Option<&str>,
        cookies: &PendingCookies,
    ) -> ApiResult<RegisterOptions> {
        let exclude = self.0.actors.reader().list_passkeys(&user.id).await?;
        let ids = exclude
            .iter()
            .filter_map(|p| URL_SAFE_NO_PAD.decode(&p.credential_id).ok())
            .collect::<Vec<_>>();
        let handle = self.user_handle(&user.id);
        let attachment = match attachment {
            Some("platform") => Some(AuthenticatorAttachment::Platform),
            Some("cross-platform") => Some(AuthenticatorAttachment::CrossPlatform),
            _ => None,
        };
        let builder = self
            .0
            .rp
            .new_challenge_register_builder(&handle, name, &user.email)
            .map_err(internal)?
            .attestation(webauthn_rs_core::proto::AttestationConveyancePreference::None)
            .user_verification_policy(UserVerificationPolicy::Preferred)
            .credential_algorithms(ALGORITHMS.to_vec())
            .exclude_credentials(Some(ids))
            .authenticator_attachment(attachment);
        let (ccr, state) = self
            .0
            .rp
            .generate_challenge_register(builder)
            .map_err(internal)?;
        let challenge = URL_SAFE_NO_PAD.encode(&ccr.public_key.challenge[..]);
        self.remember(
            Ceremony::Registration {
                user: user.id.0.clone(),
                state,
                challenge: challenge.clone(),
            },
            cookies,
        )
        .await?;
        Ok(RegisterOptions {
            challenge,
            user_handle: URL_SAFE_NO_PAD.encode(&handle),
            exclude,
        })
    }

    /// Finishes a registration of `user` with the browser's answer: the new passkey (not
    /// stored yet). The challenge is used whatever the outcome.
    pub async fn finish_registration(
        &self,
        req: &poem::Request,
        user: &User,
        response: serde_json::Value,
        name: Option<String>,
    ) -> ApiResult<Passkey> {
        let Some(Ceremony::Registration {
            user: owner,
            state,
            challenge,
        }) = self.take(req).await?
        else {
            return Err(Code::ChallengeNotFound.into());
        };
        if owner != user.id.0 {
            return Err(Code::NotAllowedToRegisterPasskey.into());
        }
        let reg: RegisterPublicKeyCredential = serde_json::from_value(response)
            .map_err(|e| refused(Code::FailedToVerifyRegistration, e))?;
        let (aaguid, public_key) = attested(&reg.response.attestation_object)
            .ok_or_else(|| refused(Code::FailedToVerifyRegistration, "authenticator data"))?;
        let cred = match ed25519::is_eddsa(&public_key) {
            true => {
                let exclude = self.0.actors.reader().list_passkeys(&user.id).await?;
                let exclude = exclude
                    .iter()
                    .filter_map(|p| URL_SAFE_NO_PAD.decode(&p.credential_id).ok())
                    .collect::<Vec<_>>();
                let challenge = URL_SAFE_NO_PAD.decode(challenge).unwrap_or_default();
                ed25519::register(&reg, &self.expected(&challenge), &exclude)
            }
            false => self.0.rp.register_credential(&reg, &state, None),
        }
        .map_err(|e| refused(Code::FailedToVerifyRegistration, e))?;
        let transports = reg
            .response
            .transports
            .iter()
            .flatten()
            .filter_map(|t| serde_json::to_value(t).ok())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect::<Vec<_>>()
            .join(",");
        let now = self.0.clock.now();
        Ok(Passkey {
            id: PasskeyId::generate(),
            user_id: user.id.clone(),
            name: name.filter(|n| !n.trim().is_empty()),
            credential_id: URL_SAFE_NO_PAD.encode(&cred.cred_id),
            public_key: STANDARD.encode(public_key),
            counter: cred.counter,
            device_type: device_type(cred.backup_eligible).into(),
            backed_up: cred.backup_state,
            transports,
            aaguid,
            credential: serde_json::to_string(&cred).map_err(internal)?,
            created_at: now,
            updated_at: now,
            last_used_at: None,
            version: 1,
        })
    }

    /// Starts a sign-in: for a signed-in `user` only their passkeys are allowed, else any
    /// discoverable one. Answers the challenge and the allowed passkeys.
    pub async fn start_authentication(
        &self,
        user: Option<&User>,
        cookies: &PendingCookies,
    ) -> ApiResult<(String, Vec<Passkey>)> {
        let allowed = match user {
            Some(u) => self.0.actors.reader().list_passkeys(&u.id).await?,
            None => Vec::new(),
        };
        let creds = allowed
            .iter()
            .filter_map(|p| serde_json::from_str::<Credential>(&p.credential).ok())
            .collect::<Vec<_>>();
        let builder = self
            .0
            .rp
            .new_challenge_authenticate_builder(creds, Some(UserVerificationPolicy::Preferred))
            .map_err(internal)?;
        let (rcr, state) = self
            .0
            .rp
            .generate_challenge_authenticate(builder)
            .map_err(internal)?;
        let challenge = URL_SAFE_NO_PAD.encode(&rcr.public_key.challenge[..]);
        self.remember(
            Ceremony::Authentication {
                user: user.map(|u| u.id.0.clone()),
                state,
                challenge: challenge.clone(),
            },
            cookies,
        )
        .await?;
        Ok((challenge, allowed))
    }

    /// Checks a sign-in's assertion. An unknown credential, a deleted one and another
    /// user's (when the options were for a signed-in user) are refused alike.
    pub async fn check_assertion(
        &self,
        req: &poem::Request,
        response: serde_json::Value,
    ) -> ApiResult<Asserted> {
        let Some(Ceremony::Authentication {
            user,
            state,
            challenge,
        }) = self.take(req).await?
        else {
            return Err(Code::ChallengeNotFound.into());
        };
        // The passkey first (as 1.7): an unknown one is told apart from a garbled answer.
        let id = response
            .get("id")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let reader = self.0.actors.reader();
        let passkey = match id.is_empty() {
            true => None,
            false => reader.get_passkey_by_credential(&id).await?,
        }
        .filter(|p| user.as_ref().is_none_or(|u| *u == p.user_id.0))
        .ok_or(Code::UnknownPasskey)?;
        let rsp: PublicKeyCredential = serde_json::from_value(response)
            .map_err(|e| refused(Code::MalformedAuthentication, e))?;
        if URL_SAFE_NO_PAD.encode(&rsp.raw_id) != id {
            return Err(refused(
                Code::MalformedAuthentication,
                "id and rawId differ",
            ));
        }
        if let Some(handle) = &rsp.response.user_handle {
            if !crate::crypto::same_bytes(handle, &self.user_handle(&passkey.user_id)) {
                return Err(Code::UnknownPasskey.into());
            }
        }
        let mut cred: Credential = serde_json::from_str(&passkey.credential).map_err(internal)?;
        cred.counter = passkey.counter;
        let used = match ed25519::is_ed25519(&cred) {
            true => {
                let challenge = URL_SAFE_NO_PAD.decode(challenge).unwrap_or_default();
                ed25519::assert(&rsp, &self.expected(&challenge), &cred)
            }
            false => self
                .0
                .rp
                .authenticate_single_credential(&rsp, &state, &cred)
                .map(|r| ed25519::Used {
                    counter: r.counter(),
                    backup_eligible: r.backup_eligible(),
                    backup_state: r.backup_state(),
                }),
        }
        .map_err(|e| match e {
            WebauthnError::CredentialPossibleCompromise => Code::PasskeyCloned.into(),
            WebauthnError::AuthenticationFailure | WebauthnError::UserNotPresent => {
                refused(Code::AuthenticationFailed, e)
            }
            e => refused(Code::MalformedAuthentication, e),
        })?;
        let user = reader
            .get_user(&passkey.user_id)
            .await?
            .ok_or(Code::UnknownPasskey)?;
        cred.counter = used.counter;
        cred.backup_state = used.backup_state;
        cred.backup_eligible = used.backup_eligible;
        let expected = passkey.version;
        let mut stored = passkey;
        stored.counter = used.counter;
        stored.backed_up = used.backup_state;
        stored.device_type = device_type(used.backup_eligible).into();
        stored.credential = serde_json::to_string(&cred).map_err(internal)?;
        Ok(Asserted {
            used: stored,
            expected,
            user,
        })
    }

    /// What the Ed25519 checks hold an answer to `challenge` against.
    fn expected<'a>(&'a self, challenge: &'a [u8]) -> Expected<'a> {
        Expected {
            challenge,
            rp_id_hash: &self.0.rp_id_hash,
            origins: &self.0.origins,
        }
    }

    async fn remember(&self, ceremony: Ceremony, cookies: &PendingCookies) -> ApiResult<()> {
        let token = storage::random_string(32);
        let now = self.0.clock.now();
        self.0
            .actors
            .put_state(&Verification {
                id: VerificationId::generate(),
                identifier: format!("{PREFIX}{token}"),
                value: serde_json::to_string(&ceremony).map_err(internal)?,
                expires_at: now + chrono::Duration::seconds(CHALLENGE_SECS as i64),
                created_at: now,
                updated_at: now,
            })
            .await?;
        let c = &self.0.cookies;
        cookies.push([c.set(
            &c.passkey,
            &self.0.signer.sign(&token),
            Some(CHALLENGE_SECS),
        )]);
        Ok(())
    }

    /// The ceremony this request's cookie names, taken (used once), if it is still waiting.
    async fn take(&self, req: &poem::Request) -> ApiResult<Option<Ceremony>> {
        let Some(raw) = request_cookie(req, &self.0.cookies.passkey) else {
            return Ok(None);
        };
        let Some(token) = self.0.signer.unsign(&raw) else {
            return Ok(None);
        };
        let Some(row) = self
            .0
            .actors
            .take_state(&format!("{PREFIX}{token}"))
            .await?
            .filter(|v| v.expires_at > self.0.clock.now())
        else {
            return Ok(None);
        };
        Ok(serde_json::from_str(&row.value).ok())
    }
}

fn device_type(backup_eligible: bool) -> &'static str {
    if backup_eligible {
        "multiDevice"
    } else {
        "singleDevice"
    }
}

/// The AAGUID and the COSE public key in an attestation object's authenticator data.
fn attested(attestation_object: &[u8]) -> Option<(String, Vec<u8>)> {
    let (_, auth) = ed25519::attestation_object(attestation_object)?;
    let attested = AuthData::parse(&auth)?.attested?;
    let h = attested
        .aaguid
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    let aaguid = format!(
        "{}-{}-{}-{}-{}",
        h.get(0..8)?,
        h.get(8..12)?,
        h.get(12..16)?,
        h.get(16..20)?,
        h.get(20..32)?
    );
    Some((aaguid, attested.key.to_vec()))
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(e.to_string())
}

/// A refusal with the reason logged (never the browser's data).
fn refused(code: Code, e: impl std::fmt::Display) -> ApiError {
    tracing::info!(code = code.code(), reason = %e, "passkey ceremony refused");
    code.into()
}
