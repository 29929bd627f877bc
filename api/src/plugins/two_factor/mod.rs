//! The two-factor plugin's routes (better-auth's `twoFactor`): a TOTP secret with backup codes
//! (`enable`, `get-totp-uri`, `generate-backup-codes`, `disable`), and the second step of a
//! sign-in that needs it (`verify-totp`, `verify-backup-code`). Its work is in `service.rs`;
//! each use of a code is written once by the user's actor (`actors/src/user/two_factor.rs`).
mod service;

pub use service::{Inner as TwoFactorInner, TwoFactorFlow};

/// The two-factor plugin's operations.
pub type Apis = TwoFactorApi;

pub fn apis() -> Apis {
    TwoFactorApi
}

use crate::audit::{action, Event, Origin};
use crate::dto::{StatusResponse, Text, UserDto};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::PendingCookies;
use crate::plugins::{text, Tag};
use crate::session::{Authed, ResolveOptions, Sessions};
use crate::AppState;
use actors::Proof;
use poem::web::Data;
use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use service::Challenge;

pub struct TwoFactorApi;

#[derive(Debug, Object)]
#[oai(rename = "TwoFactorEnableBody")]
struct EnableBody {
    password: Text,
    /// `totp` (default): an authenticator app, confirmed by a first code.
    #[oai(validator(max_length = 16))]
    method: Option<Text>,
    /// The issuer the authenticator app shows; default `two_factor.issuer`, else the app name.
    #[oai(validator(max_length = 128))]
    issuer: Option<Text>,
}

#[derive(Debug, Object)]
#[oai(rename = "TwoFactorEnableResponse", rename_all = "camelCase")]
struct EnableResponse {
    method: String,
    /// The `otpauth://` URI to show as a QR code (`totp`).
    #[oai(rename = "totpURI", skip_serializing_if_is_none)]
    totp_uri: Option<String>,
    /// Ten single-use codes for when the authenticator is lost: shown once (`totp`).
    #[oai(skip_serializing_if_is_none)]
    backup_codes: Option<Vec<String>>,
}

#[derive(Debug, Object)]
#[oai(rename = "TwoFactorPasswordBody")]
struct PasswordBody {
    password: Text,
}

#[derive(Debug, Object)]
#[oai(rename = "TwoFactorTotpUri")]
struct TotpUri {
    #[oai(rename = "totpURI")]
    totp_uri: String,
}

#[derive(Debug, Object)]
#[oai(rename = "TwoFactorBackupCodes", rename_all = "camelCase")]
struct BackupCodes {
    status: bool,
    backup_codes: Vec<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "TwoFactorVerifyBody", rename_all = "camelCase")]
struct VerifyBody {
    #[oai(validator(max_length = 64))]
    code: Text,
    /// Trust this browser for `two_factor.trust_device_days`: its sign-ins skip the second
    /// factor (the `trust_device` cookie, renewed on each use).
    trust_device: Option<bool>,
}

#[derive(Debug, Object)]
#[oai(rename = "TwoFactorSignedIn")]
struct SignedIn {
    /// The session's token (also in the session cookie).
    token: String,
    user: UserDto,
}

/// The caller's session read from the store (never the cookie cache) and their password
/// checked: what changing the second factor needs.
async fn caller_with_password(
    state: &AppState,
    req: &Request,
    cookies: &PendingCookies,
    password: &str,
) -> ApiResult<Authed> {
    let authed = state
        .sessions
        .resolve_session(
            req,
            cookies,
            ResolveOptions {
                disable_cookie_cache: true,
                ..Default::default()
            },
        )
        .await?
        .ok_or(Code::Unauthorized)?;
    match state
        .passwords
        .check_password(&authed.user, password)
        .await?
    {
        Some(true) => Ok(authed),
        _ => Err(Code::InvalidPassword.into()),
    }
}

fn event(authed: &Authed, req: &Request, action: &'static str) -> Event {
    Event::new(action, &Origin::of(req))
        .own(&authed.user.id)
        .impersonated_by(authed.session.impersonated_by.as_ref())
}

#[OpenApi(prefix_path = "/two-factor", tag = "Tag::TwoFactor")]
impl TwoFactorApi {
    /// Turn on two-factor sign-in
    ///
    /// Needs the password. `totp` (the default) answers a new authenticator secret as an
    /// `otpauth://` URI and ten backup codes, shown once; sign-ins ask for a code once a first
    /// `verify-totp` confirmed the secret. Calling it again replaces the secret and the codes.
    #[oai(path = "/enable", method = "post", operation_id = "enableTwoFactor")]
    async fn enable(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<EnableBody>,
    ) -> ApiResult<Json<EnableResponse>> {
        let body = body.0;
        let method = text(&body.method).unwrap_or("totp");
        match method {
            "totp" => {}
            "otp" if state.two_factor.otp_offered() => {}
            "otp" => return Err(Code::OtpNotEnabled.into()),
            _ => {
                return Err(ApiError::validation(
                    false,
                    vec!["method: totp or otp".into()],
                ))
            }
        }
        let authed = caller_with_password(&state, req, cookies, &body.password.0).await?;
        if method == "otp" {
            let ev = event(&authed, req, action::TWO_FACTOR_ENROLLED).detail("method", "otp");
            state
                .two_factor
                .enable_otp(&authed.user, state.audit.noted(ev))
                .await?;
            let user = state
                .reader
                .get_user(&authed.user.id)
                .await?
                .ok_or(Code::Unauthorized)?;
            state.sessions.rotate(req, cookies, &authed, user).await?;
            return Ok(Json(EnableResponse {
                method: "otp".into(),
                totp_uri: None,
                backup_codes: None,
            }));
        }
        let enrolled = state
            .two_factor
            .enroll(&authed.user, text(&body.issuer), false, Default::default())
            .await?;
        state
            .audit
            .record(
                state.audit.noted(
                    event(&authed, req, action::TWO_FACTOR_ENROLLED).detail("method", "totp"),
                ),
            )
            .await;
        Ok(Json(EnableResponse {
            method: "totp".into(),
            totp_uri: Some(enrolled.totp_uri),
            backup_codes: Some(enrolled.backup_codes),
        }))
    }

    /// Turn off two-factor sign-in
    ///
    /// Needs the password. The secret, the backup codes and the trusted devices go.
    #[oai(path = "/disable", method = "post", operation_id = "disableTwoFactor")]
    async fn disable(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<PasswordBody>,
    ) -> ApiResult<Json<StatusResponse>> {
        let authed = caller_with_password(&state, req, cookies, &body.0.password.0).await?;
        let user = state
            .actors
            .user(authed.user.id.clone())
            .with(
                state
                    .audit
                    .noted(event(&authed, req, action::TWO_FACTOR_DISABLED)),
            )
            .disable_two_factor()
            .await?;
        state.sessions.rotate(req, cookies, &authed, user).await?;
        Ok(Json(StatusResponse { status: true }))
    }

    /// The authenticator URI
    ///
    /// Needs the password: the `otpauth://` URI of the current secret (`TOTP_NOT_ENABLED`
    /// without one).
    #[oai(path = "/get-totp-uri", method = "post", operation_id = "getTotpUri")]
    async fn get_totp_uri(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<PasswordBody>,
    ) -> ApiResult<Json<TotpUri>> {
        let authed = caller_with_password(&state, req, cookies, &body.0.password.0).await?;
        Ok(Json(TotpUri {
            totp_uri: state.two_factor.totp_uri(&authed.user, None).await?,
        }))
    }

    /// New backup codes
    ///
    /// Needs the password and two-factor sign-in on. Ten new single-use codes replace every
    /// old one; they are shown once.
    #[oai(
        path = "/generate-backup-codes",
        method = "post",
        operation_id = "generateBackupCodes"
    )]
    async fn generate_backup_codes(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<PasswordBody>,
    ) -> ApiResult<Json<BackupCodes>> {
        let authed = caller_with_password(&state, req, cookies, &body.0.password.0).await?;
        if !authed.user.two_factor_enabled {
            return Err(Code::TwoFactorNotEnabled.into());
        }
        let (codes, hashes) = state.two_factor.backup_codes();
        state
            .actors
            .user(authed.user.id.clone())
            .with(
                state
                    .audit
                    .noted(event(&authed, req, action::TWO_FACTOR_BACKUP_CODES)),
            )
            .replace_backup_codes(hashes)
            .await?;
        Ok(Json(BackupCodes {
            status: true,
            backup_codes: codes,
        }))
    }

    /// Verify an authenticator code
    ///
    /// The second step of a sign-in (the `two_factor` cookie its first step set): a right
    /// code ends the challenge with a session. Signed in without that cookie, a first right
    /// code confirms a new secret and turns two-factor sign-in on. A code works once; five
    /// wrong codes end a challenge (`TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE`), ten in a row lock
    /// the second factor for 15 minutes (`TOO_MANY_ATTEMPTS`).
    #[oai(path = "/verify-totp", method = "post", operation_id = "verifyTotp")]
    async fn verify_totp(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<VerifyBody>,
    ) -> ApiResult<Json<SignedIn>> {
        let body = body.0;
        let flow = &state.two_factor;
        let Some(challenge) = flow.challenge_to_try(req).await? else {
            // No sign-in waiting: the signed-in owner confirming a new secret.
            return match state
                .sessions
                .resolve_session(req, cookies, ResolveOptions::default())
                .await?
            {
                Some(authed) => confirm_totp(&state, req, cookies, authed, &body.code.0).await,
                None => Err(Code::InvalidTwoFactorCookie.into()),
            };
        };
        let tf = challenge
            .factor
            .clone()
            .filter(|tf| tf.last_step > 0)
            .ok_or(Code::TotpNotEnabled)?;
        let Some(step) = flow.matching_step(&tf, &body.code.0)? else {
            return Err(failed(&state, req, &challenge, "totp", Code::InvalidCode).await);
        };
        let proof = Proof::TotpStep(step);
        finish(&state, req, cookies, challenge, proof, body.trust_device).await
    }

    /// Mail a sign-in code
    ///
    /// During a sign-in's second step (the `two_factor` cookie): mails a 6-digit code to the
    /// account's address, valid once for 5 minutes (`OTP_NOT_ENABLED` when the server sends
    /// no mail). Within the recipient's mail limit.
    #[oai(path = "/send-otp", method = "post", operation_id = "sendTwoFactorOtp")]
    async fn send_otp(
        &self,
        state: Data<&AppState>,
        req: &Request,
    ) -> ApiResult<Json<StatusResponse>> {
        let flow = &state.two_factor;
        let challenge = flow.challenge(req).await?;
        if !flow.otp_offered() {
            return Err(Code::OtpNotEnabled.into());
        }
        state
            .limiter
            .limit_mail(req, &challenge.user.email, state.clock.now(), &state.audit)
            .await?;
        flow.send_otp(&challenge).await?;
        Ok(Json(StatusResponse { status: true }))
    }

    /// Verify a code from the mail
    ///
    /// The second step of a sign-in with the code `send-otp` mailed: it works once, for 5
    /// minutes, and a wrong one counts against the challenge's tries.
    #[oai(
        path = "/verify-otp",
        method = "post",
        operation_id = "verifyTwoFactorOtp"
    )]
    async fn verify_otp(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<VerifyBody>,
    ) -> ApiResult<Json<SignedIn>> {
        let body = body.0;
        let flow = &state.two_factor;
        let challenge = flow
            .challenge_to_try(req)
            .await?
            .ok_or(Code::InvalidTwoFactorCookie)?;
        if !flow.take_otp(&challenge, &body.code.0).await? {
            return Err(failed(&state, req, &challenge, "otp", Code::InvalidCode).await);
        }
        // A right code ends a run of wrong ones, by mail as by the authenticator.
        let proof = Proof::MailedCode;
        finish(&state, req, cookies, challenge, proof, body.trust_device).await
    }

    /// Verify a backup code
    ///
    /// The second step of a sign-in with one of the backup codes instead of an authenticator
    /// code: each works once (`INVALID_BACKUP_CODE` otherwise), and counts against the
    /// challenge's tries as a wrong authenticator code does.
    #[oai(
        path = "/verify-backup-code",
        method = "post",
        operation_id = "verifyBackupCode"
    )]
    async fn verify_backup_code(
        &self,
        state: Data<&AppState>,
        req: &Request,
        cookies: &PendingCookies,
        body: Json<VerifyBody>,
    ) -> ApiResult<Json<SignedIn>> {
        let body = body.0;
        let flow = &state.two_factor;
        let challenge = flow
            .challenge_to_try(req)
            .await?
            .ok_or(Code::InvalidTwoFactorCookie)?;
        let proof = Proof::BackupCode(flow.code_hash(&body.code.0));
        finish(&state, req, cookies, challenge, proof, body.trust_device).await
    }
}

/// A wrong code: counted, audited, answered.
async fn failed(
    state: &AppState,
    req: &Request,
    challenge: &Challenge,
    method: &'static str,
    code: Code,
) -> ApiError {
    let e = state.two_factor.failed(challenge, code).await;
    refused(state, req, challenge, method, code).await;
    e
}

/// A refusal audited and answered, not counted against the challenge.
async fn refused(
    state: &AppState,
    req: &Request,
    challenge: &Challenge,
    method: &'static str,
    code: Code,
) -> ApiError {
    let ev = Event::new(action::TWO_FACTOR_CHALLENGE, &Origin::of(req))
        .own(&challenge.user.id)
        .detail("method", method);
    state.audit.record_refusal(ev, code).await;
    code.into()
}

/// A right code: its use, the challenge's end (once) and the new session in one write; the
/// browser trusted if asked. A code that turns out used already or unknown is refused there.
async fn finish(
    state: &AppState,
    req: &Request,
    cookies: &PendingCookies,
    challenge: Challenge,
    proof: Proof,
    trust_device: Option<bool>,
) -> ApiResult<Json<SignedIn>> {
    let flow = &state.two_factor;
    let method = match proof {
        Proof::TotpStep(_) => "totp",
        Proof::BackupCode(_) => "backup-code",
        Proof::MailedCode => "otp",
    };
    let ev = Event::new(action::TWO_FACTOR_CHALLENGE, &Origin::of(req))
        .own(&challenge.user.id)
        .detail("method", method)
        .fill(actors::Fill::TargetSession);
    let seen = challenge
        .factor
        .clone()
        .map(|tf| (challenge.user.clone(), tf));
    let done = state
        .actors
        .user(challenge.user.id.clone())
        .with(state.audit.noted(ev))
        .finish_second_step(
            proof,
            &challenge.identifier(),
            Sessions::new_session(req, challenge.remember_me),
            seen,
        )
        .await;
    let (session, user) = match done {
        Ok(done) => done,
        Err(e) => {
            let e = ApiError::from(e);
            return Err(match (method, e.code) {
                // A right code used already (a replay, or the loser of a race on one code):
                // refused and audited, not counted as a guess — it is not one, and counting
                // it would let the race's losers end the winner's challenge.
                ("totp", Code::InvalidCode) => {
                    refused(state, req, &challenge, method, Code::InvalidCode).await
                }
                ("backup-code", Code::InvalidBackupCode | Code::TwoFactorNotEnabled) => {
                    let code = Code::InvalidBackupCode;
                    failed(state, req, &challenge, method, code).await
                }
                _ => e,
            });
        }
    };
    // 1.7 clears a `dont_remember` left from before after a code, not after a backup code.
    cookies.push(flow.clear_challenge(challenge.remember_me && method != "backup-code"));
    let authed = state
        .sessions
        .started(cookies, user, session, challenge.remember_me);
    if trust_device == Some(true) {
        flow.trust_device(&authed.user.id, cookies).await?;
        let ev =
            Event::new(action::TWO_FACTOR_DEVICE_TRUSTED, &Origin::of(req)).own(&authed.user.id);
        state.audit.record(state.audit.noted(ev)).await;
    }
    Ok(Json(SignedIn {
        token: authed.session.token.clone(),
        user: UserDto::from(&authed.user),
    }))
}

/// A first code of a new secret, from its signed-in owner: the secret is confirmed and
/// two-factor sign-in turns on.
async fn confirm_totp(
    state: &AppState,
    req: &Request,
    cookies: &PendingCookies,
    authed: Authed,
    code: &str,
) -> ApiResult<Json<SignedIn>> {
    let flow = &state.two_factor;
    let tf = flow
        .factor(&authed.user.id)
        .await?
        .ok_or(Code::TotpNotEnabled)?;
    let Some(step) = flow.matching_step(&tf, code)? else {
        return Err(Code::InvalidCode.into());
    };
    let ev = event(&authed, req, action::TWO_FACTOR_ENROLLED).detail("confirmed", "totp");
    let user = state
        .actors
        .user(authed.user.id.clone())
        .with(state.audit.noted(ev))
        .use_totp_step(step)
        .await?;
    let now = state.sessions.rotate(req, cookies, &authed, user).await?;
    Ok(Json(SignedIn {
        token: now.session.token.clone(),
        user: UserDto::from(&now.user),
    }))
}
