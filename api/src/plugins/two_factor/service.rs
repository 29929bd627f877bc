//! The two-factor plugin's service: secrets and codes (TOTP per RFC 6238, backup codes), the
//! sign-in challenge (a single-use stored row named by a signed cookie, its wrong codes
//! counted in the store so every process sees them), and trusted devices.
use crate::config::TwoFactorConfig;
use crate::crypto::{Sealer, Signer};
use crate::error::{ApiError, ApiResult, Code};
use crate::http::{request_cookie, CookieNames, PendingCookies, URI_COMPONENT};
use percent_encoding::utf8_percent_encode;
use std::sync::Arc;
use storage::{Clock, TwoFactor, User, UserId, Verification, VerificationId};

/// TOTP as every authenticator app reads it: SHA-1, 6 digits, 30-second steps.
const STEP_SECS: u64 = 30;
const DIGITS: usize = 6;
/// Backup codes per set.
const BACKUP_CODES: usize = 10;
const CHALLENGE_PREFIX: &str = "two-factor:";
/// A code by mail: `two-factor-otp:{challenge}:{keyed hash of the code}`, single use.
const OTP_PREFIX: &str = "two-factor-otp:";
/// How long a code by mail works.
const OTP_SECS: i64 = 300;

/// The two-factor service. Cheap to clone.
#[derive(Clone)]
pub struct TwoFactorFlow(Arc<Inner>);

/// What the two-factor service uses.
pub struct Inner {
    pub actors: actors::Actors,
    pub clock: Arc<dyn Clock>,
    pub signer: Signer,
    /// Seals TOTP secrets at rest.
    pub sealer: Sealer,
    pub cookies: CookieNames,
    pub config: TwoFactorConfig,
    /// The issuer when neither the request nor `two_factor.issuer` names one.
    pub app_name: String,
    /// Codes by mail (offered when mail is on).
    pub mail: crate::delivery::Mail,
}

/// A new factor's answer: the `otpauth://` URI and the backup codes, shown once.
pub struct Enrolled {
    pub totp_uri: String,
    pub backup_codes: Vec<String>,
}

/// A sign-in waiting for its second factor.
pub struct Challenge {
    id: String,
    pub user: User,
    pub remember_me: bool,
    /// The user's factor as the challenge began to be answered.
    pub factor: Option<TwoFactor>,
}

/// What a `two_factor` cookie says.
struct ChallengeCookie {
    id: String,
    remember_me: bool,
    /// The user and the factor's version as the challenge began (cookies made before it
    /// named them have neither).
    named: Option<(UserId, u64)>,
}

impl ChallengeCookie {
    fn identifier(&self) -> String {
        format!("{CHALLENGE_PREFIX}{}", self.id)
    }
}

impl Challenge {
    /// Wrong codes count "in a row" until a right authenticator or backup code, which moves
    /// the factor's version: the run is named by it.
    fn run(&self) -> u64 {
        self.factor.as_ref().map_or(0, |f| f.version)
    }

    /// Its stored row's identifier.
    pub fn identifier(&self) -> String {
        format!("{CHALLENGE_PREFIX}{}", self.id)
    }
}

impl TwoFactorFlow {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }

    fn reader(&self) -> actors::Reader {
        self.0.actors.reader()
    }

    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.0.clock.now()
    }

    /// A new factor for `user` in place of any: a TOTP secret and backup codes; `on`: asked
    /// at sign-in at once (codes by mail), else once a first TOTP code confirms it. `ctx`: the
    /// request's context (audit notes) kept with the decision.
    pub async fn enroll(
        &self,
        user: &User,
        issuer: Option<&str>,
        on: bool,
        ctx: actors::Ctx,
    ) -> ApiResult<Enrolled> {
        let raw: [u8; 20] = rand::random();
        let secret = base32::encode(base32::Alphabet::Rfc4648 { padding: false }, &raw);
        let (codes, hashes) = self.backup_codes();
        self.0
            .actors
            .user(user.id.clone())
            .with(ctx)
            .enroll_two_factor(self.0.sealer.seal(&secret), hashes, on)
            .await?;
        Ok(Enrolled {
            totp_uri: self.uri(&user.email, &secret, issuer),
            backup_codes: codes,
        })
    }

    /// Turns two-factor sign-in on with codes by mail: at once (a factor is made if the user
    /// has none; its backup codes can be made anew later).
    pub async fn enable_otp(&self, user: &User, ctx: actors::Ctx) -> ApiResult<()> {
        if self.factor(&user.id).await?.is_none() {
            self.enroll(user, None, true, ctx).await?;
            return Ok(());
        }
        self.0
            .actors
            .user(user.id.clone())
            .with(ctx)
            .update_user(actors::UserPatch {
                two_factor_enabled: Some(true),
                ..Default::default()
            })
            .await?;
        Ok(())
    }

    /// The user's factor, if they have one.
    pub async fn factor(&self, user: &UserId) -> ApiResult<Option<TwoFactor>> {
        Ok(self.reader().get_two_factor(user).await?)
    }

    /// The `otpauth://` URI of the user's TOTP secret (`TOTP_NOT_ENABLED` without one).
    pub async fn totp_uri(&self, user: &User, issuer: Option<&str>) -> ApiResult<String> {
        let tf = self.factor(&user.id).await?.ok_or(Code::TotpNotEnabled)?;
        let secret = self
            .0
            .sealer
            .open(&tf.secret)
            .ok_or_else(|| ApiError::internal("a TOTP secret does not open"))?;
        Ok(self.uri(&user.email, &secret, issuer))
    }

    fn uri(&self, email: &str, secret: &str, issuer: Option<&str>) -> String {
        let issuer =
            issuer
                .filter(|i| !i.trim().is_empty())
                .unwrap_or(if self.0.config.issuer.is_empty() {
                    &self.0.app_name
                } else {
                    &self.0.config.issuer
                });
        let enc = |s: &str| utf8_percent_encode(s, URI_COMPONENT).to_string();
        format!(
            "otpauth://totp/{}:{}?secret={secret}&issuer={}&digits={DIGITS}&period={STEP_SECS}",
            enc(issuer),
            enc(email),
            enc(issuer)
        )
    }

    /// The time step a TOTP code is right for (now, or one step either side), if any.
    pub fn matching_step(&self, tf: &TwoFactor, code: &str) -> ApiResult<Option<i64>> {
        let secret = self
            .0
            .sealer
            .open(&tf.secret)
            .ok_or_else(|| ApiError::internal("a TOTP secret does not open"))?;
        let raw = base32::decode(base32::Alphabet::Rfc4648 { padding: false }, &secret)
            .ok_or_else(|| ApiError::internal("a TOTP secret is not base32"))?;
        let totp =
            totp_rs::TOTP::new_unchecked(totp_rs::Algorithm::SHA1, DIGITS, 1, STEP_SECS, raw);
        let now = self.now().timestamp().max(0) as u64;
        let code = code.trim();
        let mut found = None;
        // Every candidate is compared, so the time taken does not tell which one matched.
        for t in [now.saturating_sub(STEP_SECS), now, now + STEP_SECS] {
            if crate::crypto::same_bytes(totp.generate(t).as_bytes(), code.as_bytes()) {
                found = Some((t / STEP_SECS) as i64);
            }
        }
        Ok(found)
    }

    /// Fresh backup codes (`xxxxx-xxxxx`, letters and digits) and their hashes.
    pub fn backup_codes(&self) -> (Vec<String>, Vec<String>) {
        let codes: Vec<String> = (0..BACKUP_CODES)
            .map(|_| {
                let s = storage::random_string(10);
                format!("{}-{}", &s[..5], &s[5..])
            })
            .collect();
        let hashes = codes.iter().map(|c| self.code_hash(c)).collect();
        (codes, hashes)
    }

    /// A backup code as stored: keyed with the server secret, so a leaked table is no list
    /// of codes to try.
    pub fn code_hash(&self, code: &str) -> String {
        self.0
            .signer
            .signature(&format!("backup-code:{}", code.trim()))
    }

    /// Whether a sign-in of `user` from this browser needs the second step: two-factor
    /// sign-in on, and the browser not trusted to skip it (a trusted browser's cookie is
    /// rotated by asking). Every way to sign in but a passkey asks this first.
    pub async fn needed(
        &self,
        req: &poem::Request,
        user: &User,
        cookies: &PendingCookies,
    ) -> ApiResult<bool> {
        Ok(user.two_factor_enabled && !self.trusted(req, &user.id, cookies).await?)
    }

    /// Starts the second step of `user`'s sign-in: the challenge row and its cookies (see
    /// [`TwoFactorFlow::challenge_cookies`]); answers the methods it can be finished with.
    pub async fn begin(
        &self,
        user: &User,
        remember_me: bool,
        cookies: &PendingCookies,
    ) -> ApiResult<Vec<String>> {
        let id = storage::random_string(32);
        // The factor (for the methods and the cookie) read while the challenge is written.
        let (factor, ()) = tokio::try_join!(self.factor(&user.id), self.put_challenge(&id, user))?;
        let run = factor.as_ref().map_or(0, |f| f.version);
        self.challenge_cookies(&id, user, run, remember_me, cookies);
        Ok(self.methods(factor.as_ref()))
    }

    /// The stored, single-use challenge `id` of `user`'s sign-in.
    async fn put_challenge(&self, id: &str, user: &User) -> ApiResult<()> {
        let now = self.now();
        let ttl = self.0.config.challenge_expires_in;
        self.0
            .actors
            .put_state(&Verification {
                id: VerificationId::generate(),
                identifier: format!("{CHALLENGE_PREFIX}{id}"),
                value: user.id.0.clone(),
                expires_at: now + chrono::Duration::seconds(ttl as i64),
                created_at: now,
                updated_at: now,
            })
            .await?;
        Ok(())
    }

    /// The cookies of a sign-in that waits for its second factor: the `two_factor` cookie
    /// naming challenge `id`, and no session cookie. It also names the user and the factor's
    /// version (`run`), so that answering it reads the challenge, the user, the factor and the
    /// try counters at once (see [`TwoFactorFlow::challenge_to_try`]).
    fn challenge_cookies(
        &self,
        id: &str,
        user: &User,
        run: u64,
        remember_me: bool,
        cookies: &PendingCookies,
    ) {
        let c = &self.0.cookies;
        // No session (1.7 leaves the `dont_remember` cookie as it is).
        cookies.push([
            c.set(&c.session_token, "", Some(0)),
            c.set(&c.session_data, "", Some(0)),
        ]);
        let value = format!("{id}.{}.{run}.{}", u8::from(remember_me), user.id.0);
        cookies.push([c.set(
            &c.two_factor,
            &self.0.signer.sign(&value),
            Some(self.0.config.challenge_expires_in),
        )]);
    }

    /// The methods a challenge can be answered with, given the user's `factor`: `totp` once
    /// confirmed, `otp` (a code by mail) when the server sends mail.
    fn methods(&self, factor: Option<&TwoFactor>) -> Vec<String> {
        let totp = factor.is_some_and(|tf| tf.last_step > 0);
        let mut m = Vec::new();
        if totp {
            m.push("totp".into());
        }
        if self.otp_offered() {
            m.push("otp".into());
        }
        m
    }

    /// Whether codes by mail are offered (the server sends mail).
    pub fn otp_offered(&self) -> bool {
        self.0.mail.enabled()
    }

    /// Mails a new code for the challenge (single use, 5 minutes), stored with its mail.
    pub async fn send_otp(&self, c: &Challenge) -> ApiResult<()> {
        let code = format!("{:06}", rand::random::<u32>() % 1_000_000);
        let job = crate::mail::MailJob::new(
            crate::mail::MailKind::TwoFactorOtp,
            &c.user.email,
            String::new(),
            &[("name", c.user.name.as_str()), ("code", code.as_str())],
        );
        let jobs = [job];
        self.0
            .actors
            .user(c.user.id.clone())
            .with(self.0.mail.mailing(actors::Ctx::default(), &jobs))
            .issue_token(
                &self.otp_identifier(c, &code),
                chrono::Duration::seconds(OTP_SECS),
            )
            .await?;
        self.0.mail.deliver(&jobs).await;
        Ok(())
    }

    fn otp_identifier(&self, c: &Challenge, code: &str) -> String {
        let hash = self
            .0
            .signer
            .signature(&format!("two-factor-otp:{}:{}", c.id, code.trim()));
        format!("{OTP_PREFIX}{}:{hash}", c.id)
    }

    /// Uses a code by mail of this challenge: `false` unless it is one, unused and unexpired.
    pub async fn take_otp(&self, c: &Challenge, code: &str) -> ApiResult<bool> {
        let taken = self
            .0
            .actors
            .take_state(&self.otp_identifier(c, code))
            .await?;
        Ok(taken.is_some_and(|v| v.value == c.user.id.0 && v.expires_at > self.now()))
    }

    /// The sign-in this request's `two_factor` cookie names, while it waits: else
    /// `INVALID_TWO_FACTOR_COOKIE`.
    pub async fn challenge(&self, req: &poem::Request) -> ApiResult<Challenge> {
        self.pending_challenge(req)
            .await?
            .ok_or_else(|| Code::InvalidTwoFactorCookie.into())
    }

    /// The sign-in this request's `two_factor` cookie names, if it is valid and waits.
    pub async fn pending_challenge(&self, req: &poem::Request) -> ApiResult<Option<Challenge>> {
        match self.cookie(req) {
            Some(cookie) => self.read_challenge(cookie).await,
            None => Ok(None),
        }
    }

    /// The challenge `cookie` names, if it waits.
    async fn read_challenge(&self, cookie: ChallengeCookie) -> ApiResult<Option<Challenge>> {
        let (reader, identifier) = (self.reader(), cookie.identifier());
        let row = reader.get_verification(&identifier);
        let Some((row, user, factor)) = (match &cookie.named {
            // The user and its factor read beside the challenge.
            Some((user, _)) => {
                let (row, u, f) =
                    tokio::try_join!(row, reader.get_user(user), reader.get_two_factor(user))?;
                row.map(|row| (row, u, f))
            }
            // A cookie from before it named its user: the challenge, then its user and factor.
            None => match row.await? {
                Some(row) => {
                    let owner = UserId(row.value.clone());
                    let (u, f) =
                        tokio::try_join!(reader.get_user(&owner), reader.get_two_factor(&owner))?;
                    Some((row, u, f))
                }
                None => None,
            },
        }) else {
            return Ok(None);
        };
        Ok(self.assemble(cookie, row, user, factor))
    }

    /// The challenge of this request's `two_factor` cookie with its tries checked (see
    /// [`TwoFactorFlow::may_try`]): `None` when there is none. With a cookie that names its
    /// user and the factor's version, the challenge, the user, the factor and both counters
    /// are read at once (the lock counter again if the factor moved since the cookie).
    pub async fn challenge_to_try(&self, req: &poem::Request) -> ApiResult<Option<Challenge>> {
        let Some(cookie) = self.cookie(req) else {
            return Ok(None);
        };
        let Some((user, run)) = cookie.named.clone() else {
            // A cookie from before it named its user: the challenge first, then its counters.
            let Some(c) = self.read_challenge(cookie).await? else {
                return Ok(None);
            };
            self.may_try(&c).await?;
            return Ok(Some(c));
        };
        let (reader, identifier) = (self.reader(), cookie.identifier());
        let (row, u, f, counts) = tokio::try_join!(
            reader.get_verification(&identifier),
            reader.get_user(&user),
            reader.get_two_factor(&user),
            self.counts(&cookie.id, &user, run),
        )?;
        let Some(c) = row.and_then(|row| self.assemble(cookie, row, u, f)) else {
            return Ok(None);
        };
        let counts = if c.run() == run {
            counts
        } else {
            self.counts(&c.id, &c.user.id, c.run()).await?
        };
        self.check_counts(&c, counts).await?;
        Ok(Some(c))
    }

    /// The `two_factor` cookie's challenge id, remember-me and (from cookies made since it
    /// named them) user and factor version.
    fn cookie(&self, req: &poem::Request) -> Option<ChallengeCookie> {
        let cookie = request_cookie(req, &self.0.cookies.two_factor)?;
        let value = self.0.signer.unsign(&cookie)?;
        let mut parts = value.splitn(4, '.');
        let (id, remember) = (parts.next()?, parts.next()?);
        let named = match (parts.next(), parts.next()) {
            (Some(run), Some(user)) => Some((UserId(user.to_owned()), run.parse().ok()?)),
            (None, None) => None,
            _ => return None,
        };
        Some(ChallengeCookie {
            id: id.to_owned(),
            remember_me: remember == "1",
            named,
        })
    }

    /// The challenge from its row, user and factor: `None` when expired, its user gone, or
    /// the row names another user than the cookie.
    fn assemble(
        &self,
        cookie: ChallengeCookie,
        row: Verification,
        user: Option<User>,
        factor: Option<TwoFactor>,
    ) -> Option<Challenge> {
        if row.expires_at <= self.now() {
            return None;
        }
        let user = user.filter(|u| u.id.0 == row.value)?;
        Some(Challenge {
            id: cookie.id,
            user,
            remember_me: cookie.remember_me,
            factor,
        })
    }

    fn counters(&self) -> storage::DynStore {
        self.0.actors.store()
    }

    /// Refuses a challenge that took its wrong codes (it is dead then: a new sign-in starts
    /// anew) or whose user is locked out after too many wrong codes in a row.
    pub async fn may_try(&self, c: &Challenge) -> ApiResult<()> {
        let counts = self.counts(&c.id, &c.user.id, c.run()).await?;
        self.check_counts(c, counts).await
    }

    /// The lock's count (wrong codes in a row of `user`'s factor at version `run`) and the
    /// challenge's tries, read side by side.
    async fn counts(
        &self,
        challenge: &str,
        user: &UserId,
        run: u64,
    ) -> storage::StoreResult<(u32, u32)> {
        let cfg = &self.0.config;
        let now = self.now();
        let counters = self.counters();
        let (lock, tries) = (lock_key(user, run), tries_key(challenge));
        let (locked, tries) = tokio::try_join!(
            counters.count(
                &lock,
                chrono::Duration::seconds(cfg.lock_secs as i64),
                cfg.lock_after,
                now,
            ),
            counters.count(
                &tries,
                chrono::Duration::seconds(cfg.challenge_expires_in as i64),
                cfg.max_attempts,
                now,
            ),
        )?;
        Ok((locked.count, tries.count))
    }

    async fn check_counts(&self, c: &Challenge, (locked, tries): (u32, u32)) -> ApiResult<()> {
        let cfg = &self.0.config;
        if locked >= cfg.lock_after {
            return Err(Code::TwoFactorLocked.into());
        }
        if tries >= cfg.max_attempts {
            self.0.actors.take_state(&c.identifier()).await?;
            return Err(Code::TooManyAttemptsRequestNewCode.into());
        }
        Ok(())
    }

    /// Counts a wrong code against the challenge and its user; answers `code`'s error.
    pub async fn failed(&self, c: &Challenge, code: Code) -> ApiError {
        let cfg = &self.0.config;
        let now = self.now();
        let counters = self.counters();
        let (tries_key, lock_key) = (tries_key(&c.id), lock_key(&c.user.id, c.run()));
        // Both counted side by side.
        let (tries, lock) = tokio::join!(
            counters.hit(
                &tries_key,
                chrono::Duration::seconds(cfg.challenge_expires_in as i64),
                cfg.max_attempts + 1,
                now,
            ),
            counters.hit(
                &lock_key,
                chrono::Duration::seconds(cfg.lock_secs as i64),
                cfg.lock_after + 1,
                now,
            ),
        );
        if let Err(e) = tries.and(lock) {
            // Not counted is not refused: the code was wrong either way.
            tracing::warn!(error = %e, "two-factor attempt not counted");
        }
        code.into()
    }

    /// The `Set-Cookie`s that end the challenge in the browser (and, for a remembered
    /// sign-in, any `dont_remember` left from before, as 1.7 does).
    pub fn clear_challenge(&self, remember_me: bool) -> Vec<String> {
        let c = &self.0.cookies;
        let mut out = vec![c.set(&c.two_factor, "", Some(0))];
        if remember_me {
            out.push(c.set(&c.dont_remember, "", Some(0)));
        }
        out
    }

    /// Trusts this browser for `user`: a single-use row and its signed cookie (rotated each
    /// time it is used).
    pub async fn trust_device(&self, user: &UserId, cookies: &PendingCookies) -> ApiResult<()> {
        let token = storage::random_string(32);
        let now = self.now();
        let ttl = u64::from(self.0.config.trust_device_days) * 86400;
        self.0
            .actors
            .put_state(&Verification {
                id: VerificationId::generate(),
                identifier: format!("{}{token}", actors::TRUST_DEVICE_PREFIX),
                value: user.0.clone(),
                expires_at: now + chrono::Duration::seconds(ttl as i64),
                created_at: now,
                updated_at: now,
            })
            .await?;
        let c = &self.0.cookies;
        cookies.push([c.set(&c.trust_device, &self.0.signer.sign(&token), Some(ttl))]);
        Ok(())
    }

    /// Whether this browser is trusted to skip `user`'s second factor; when it is, its trust
    /// moves to a new cookie (the old one works no more).
    pub async fn trusted(
        &self,
        req: &poem::Request,
        user: &UserId,
        cookies: &PendingCookies,
    ) -> ApiResult<bool> {
        let Some(cookie) = request_cookie(req, &self.0.cookies.trust_device) else {
            return Ok(false);
        };
        let Some(token) = self.0.signer.unsign(&cookie) else {
            return Ok(false);
        };
        let taken = self
            .0
            .actors
            .take_state(&format!("{}{token}", actors::TRUST_DEVICE_PREFIX))
            .await?;
        match taken {
            Some(v) if v.value == user.0 && v.expires_at > self.now() => {
                self.trust_device(user, cookies).await?;
                Ok(true)
            }
            Some(v) if v.value != user.0 => {
                // Another user's device: theirs still (put back as it was).
                self.0.actors.put_state(&v).await?;
                Ok(false)
            }
            _ => Ok(false),
        }
    }
}

fn tries_key(challenge: &str) -> String {
    format!("2fa-tries:{challenge}")
}

fn lock_key(user: &UserId, run: u64) -> String {
    format!("2fa-failures:{user}:{run}")
}
