//! The user's second factor (two-factor plugin): enrolling, codes used once (a TOTP time step
//! and each backup code), new backup codes, turning it off, and a sign-in's second step. The
//! caller checks a code against the secret (it holds the sealing key); here each use is
//! written once, compare-and-set on the factor's version, so two processes cannot both accept
//! one code.
use super::*;
use storage::{SecondStep, StoreError, TwoFactor};

/// What proved a sign-in's second factor.
#[derive(Debug, Clone)]
pub enum Proof {
    /// An authenticator code, of this TOTP time step.
    TotpStep(i64),
    /// A backup code (its hash).
    BackupCode(String),
    /// A code by mail, taken already: the factor's version moves, which ends a run of wrong
    /// codes (a user without a factor row is signed in all the same).
    MailedCode,
}

impl Proof {
    /// The factor after this use, or the refusal.
    fn apply(&self, tf: &mut TwoFactor) -> Result<(), ActorError> {
        match self {
            Proof::TotpStep(step) => {
                if *step <= tf.last_step {
                    return Err(ActorError::Refused(Rule::CodeUsed));
                }
                tf.last_step = *step;
            }
            Proof::BackupCode(hash) => {
                let at = tf
                    .backup_codes
                    .iter()
                    .position(|h| same(h, hash))
                    .ok_or(ActorError::Refused(Rule::InvalidBackupCode))?;
                tf.backup_codes.remove(at);
            }
            Proof::MailedCode => {}
        }
        Ok(())
    }
}

pub(crate) enum TwoFactorMsg {
    Enroll {
        secret: String,
        backup_codes: Vec<String>,
        on: bool,
        reply: Reply<TwoFactor>,
    },
    UseStep {
        step: i64,
        reply: Reply<User>,
    },
    /// A sign-in's second step: the proof used, the challenge taken, the session started.
    SignIn {
        proof: Proof,
        challenge: String,
        new: NewSession,
        seen: Option<Box<(User, TwoFactor)>>,
        reply: Reply<(Session, User)>,
    },
    ReplaceBackupCodes {
        hashes: Vec<String>,
        reply: Reply<()>,
    },
    Disable(Reply<User>),
}

/// Equal without telling where they differ (backup codes' hashes).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl UserActor {
    pub(super) async fn two_factor(&self, id: &UserId, msg: TwoFactorMsg, ctx: &Ctx) {
        match msg {
            TwoFactorMsg::Enroll {
                secret,
                backup_codes,
                on,
                reply,
            } => {
                let _ = reply.send(self.enroll(id, secret, backup_codes, on, ctx).await);
            }
            TwoFactorMsg::UseStep { step, reply } => {
                let proof = Proof::TotpStep(step);
                let _ = reply.send(self.use_factor(id, ctx, |tf| proof.apply(tf)).await);
            }
            TwoFactorMsg::SignIn {
                proof,
                challenge,
                new,
                seen,
                reply,
            } => {
                let r = self
                    .second_step(id, &proof, &challenge, new, seen.map(|s| *s), ctx)
                    .await;
                let _ = reply.send(r);
            }
            TwoFactorMsg::ReplaceBackupCodes { hashes, reply } => {
                let r = self
                    .change_factor(id, ctx, "two_factor.backup_codes_regenerated", |tf| {
                        tf.backup_codes = hashes.clone();
                        Ok(())
                    })
                    .await
                    .map(|_| ());
                let _ = reply.send(r);
            }
            TwoFactorMsg::Disable(reply) => {
                let _ = reply.send(self.disable_two_factor(id, ctx).await);
            }
        }
    }

    /// A new factor in place of any: off until a first code confirms it, unless `on`.
    async fn enroll(
        &self,
        id: &UserId,
        secret: String,
        backup_codes: Vec<String>,
        on: bool,
        ctx: &Ctx,
    ) -> Result<TwoFactor, ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let now = self.now();
            let old = store.get_two_factor(id).await?;
            let tf = TwoFactor {
                user_id: id.clone(),
                secret: secret.clone(),
                backup_codes: backup_codes.clone(),
                last_step: old.as_ref().map_or(0, |o| o.last_step),
                created_at: old.as_ref().map_or(now, |o| o.created_at),
                updated_at: now,
                version: old.as_ref().map_or(1, |o| o.version + 1),
            };
            let events = if on {
                Vec::new()
            } else {
                self.request(id, ctx, &Facts::default())
            };
            match store
                .put_two_factor(&tf, old.as_ref().map(|o| o.version), &events)
                .await
            {
                Ok(()) => {
                    if on {
                        self.turn_on(id, ctx).await?;
                    }
                    return Ok(tf);
                }
                Err(StoreError::ConcurrentModification | StoreError::Conflict(_)) => continue,
                Err(StoreError::NotFound) => return Err(ActorError::NotFound),
                Err(e) => return Err(e.into()),
            }
        }
        Err(contended())
    }

    /// One use of the factor (`apply` refuses or changes it), written once; the first use
    /// of a factor not on yet turns it on. Answers the user as it is now.
    async fn use_factor(
        &self,
        id: &UserId,
        ctx: &Ctx,
        apply: impl Fn(&mut TwoFactor) -> Result<(), ActorError>,
    ) -> Result<User, ActorError> {
        let user = self
            .shared
            .store
            .get_user(id)
            .await?
            .ok_or(ActorError::NotFound)?;
        self.change_factor(id, ctx, "", apply).await?;
        if user.two_factor_enabled {
            return Ok(user);
        }
        self.turn_on(id, &Ctx::default()).await
    }

    /// Writes `apply`'s change of the stored factor (retried on another process's change);
    /// `event` names the domain event, if any.
    async fn change_factor(
        &self,
        id: &UserId,
        ctx: &Ctx,
        event: &str,
        apply: impl Fn(&mut TwoFactor) -> Result<(), ActorError>,
    ) -> Result<TwoFactor, ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let mut tf = store
                .get_two_factor(id)
                .await?
                .ok_or(ActorError::Refused(Rule::TwoFactorNotEnabled))?;
            let expected = tf.version;
            apply(&mut tf)?;
            tf.version += 1;
            tf.updated_at = self.now();
            let mut emit = Emit::user(id, self.now());
            if !event.is_empty() {
                emit = emit.domain(event, serde_json::json!({ "userId": id }));
            }
            let events = emit.request(ctx, &Facts::default()).done();
            match store.put_two_factor(&tf, Some(expected), &events).await {
                Ok(()) => return Ok(tf),
                Err(StoreError::ConcurrentModification) => continue,
                Err(StoreError::NotFound) => {
                    return Err(ActorError::Refused(Rule::TwoFactorNotEnabled))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(contended())
    }

    /// A sign-in's second step in one store write: the proof's use of the factor, the
    /// challenge taken, the new session and its events (retried on another process's change
    /// of the factor). Answers the session and the user as stored.
    async fn second_step(
        &self,
        id: &UserId,
        proof: &Proof,
        challenge: &str,
        new: NewSession,
        mut seen: Option<(User, TwoFactor)>,
        ctx: &Ctx,
    ) -> Result<(Session, User), ActorError> {
        let store = &self.shared.store;
        let mut attempts = Attempts::new();
        while attempts.next().await {
            // The first attempt may start from the user and factor the caller read with the
            // challenge: a factor changed since fails the write's compare-and-set (and the
            // next attempt reads both anew), a ban since is caught after the write.
            let (user, factor) = match seen.take() {
                Some((user, tf)) if !user.banned => (user, Some(tf)),
                _ => (
                    self.check_not_banned(id).await?,
                    store.get_two_factor(id).await?,
                ),
            };
            if !user.two_factor_enabled {
                return Err(ActorError::Refused(Rule::TwoFactorNotEnabled));
            }
            let factor = match (factor, proof) {
                (None, Proof::MailedCode) => None,
                (None, _) => return Err(ActorError::Refused(Rule::TwoFactorNotEnabled)),
                (Some(mut tf), _) => {
                    let expected = tf.version;
                    proof.apply(&mut tf)?;
                    tf.version += 1;
                    tf.updated_at = self.now();
                    Some((tf, expected))
                }
            };
            let session = self.new_session(id, new.clone());
            let events = self.session_created(&session, ctx);
            let step = SecondStep {
                factor: factor.as_ref().map(|(tf, v)| (tf, *v)),
                challenge,
                session: &session,
                events: &events,
            };
            match store.finish_second_step(&step).await {
                Ok(()) => return Ok((self.session_stands(id, session).await?, user)),
                Err(StoreError::ConcurrentModification) => continue,
                Err(StoreError::NotFound) => {
                    return Err(ActorError::Refused(Rule::TwoFactorNotEnabled))
                }
                Err(StoreError::Conflict(_)) => {
                    return Err(ActorError::Refused(Rule::ChallengeTaken))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(contended())
    }

    async fn turn_on(&self, id: &UserId, ctx: &Ctx) -> Result<User, ActorError> {
        let user = self
            .change_user(
                id,
                UserPatch {
                    two_factor_enabled: Some(true),
                    ..UserPatch::default()
                },
                ctx,
                None,
            )
            .await?;
        let events = Emit::user(id, self.now())
            .domain("two_factor.enabled", serde_json::json!({ "userId": id }))
            .done();
        self.shared.store.append_events(&events).await?;
        Ok(user)
    }

    /// Turns the factor off: the factor goes, the user's flag follows, and so do the devices
    /// trusted to skip it.
    async fn disable_two_factor(&self, id: &UserId, ctx: &Ctx) -> Result<User, ActorError> {
        let store = &self.shared.store;
        let events = Emit::user(id, self.now())
            .domain("two_factor.disabled", serde_json::json!({ "userId": id }))
            .request(ctx, &Facts::default())
            .done();
        store.delete_two_factor(id, &events).await?;
        store
            .delete_verifications_of(&id.0, TRUST_DEVICE_PREFIX)
            .await?;
        self.change_user(
            id,
            UserPatch {
                two_factor_enabled: Some(false),
                ..UserPatch::default()
            },
            &Ctx::default(),
            None,
        )
        .await
    }
}

/// The identifier prefix of trusted devices (`trust-device:{token}`, value the user id).
pub const TRUST_DEVICE_PREFIX: &str = "trust-device:";

impl UserHandle {
    /// A new second factor (sealed secret, hashed backup codes) in place of any; `on`: asked
    /// at sign-in at once (codes by mail), else once a first TOTP code confirms it.
    pub async fn enroll_two_factor(
        &self,
        secret: String,
        backup_codes: Vec<String>,
        on: bool,
    ) -> Result<TwoFactor, ActorError> {
        self.call(|reply| {
            UserMsg::TwoFactor(TwoFactorMsg::Enroll {
                secret: secret.clone(),
                backup_codes: backup_codes.clone(),
                on,
                reply,
            })
        })
        .await
    }

    /// Uses the TOTP time step a code matched: refused (`CodeUsed`) for a step used already.
    pub async fn use_totp_step(&self, step: i64) -> Result<User, ActorError> {
        self.call(|reply| UserMsg::TwoFactor(TwoFactorMsg::UseStep { step, reply }))
            .await
    }

    /// A sign-in's second step with `proof`: the challenge (its verification identifier)
    /// taken, the session started — one store write. Refused: `CodeUsed`,
    /// `InvalidBackupCode`, `TwoFactorNotEnabled`, `ChallengeTaken`, `Banned`.
    ///
    /// `seen`: the user and factor as the caller read them with the challenge, the first
    /// attempt's base (it spares the actor reading them again).
    pub async fn finish_second_step(
        &self,
        proof: Proof,
        challenge: &str,
        new: NewSession,
        seen: Option<(User, TwoFactor)>,
    ) -> Result<(Session, User), ActorError> {
        self.call(|reply| {
            UserMsg::TwoFactor(TwoFactorMsg::SignIn {
                proof: proof.clone(),
                challenge: challenge.to_owned(),
                new: new.clone(),
                seen: seen.clone().map(Box::new),
                reply,
            })
        })
        .await
    }

    /// New backup codes (hashes) in place of all the old ones.
    pub async fn replace_backup_codes(&self, hashes: Vec<String>) -> Result<(), ActorError> {
        self.call(|reply| {
            UserMsg::TwoFactor(TwoFactorMsg::ReplaceBackupCodes {
                hashes: hashes.clone(),
                reply,
            })
        })
        .await
    }

    /// Turns the second factor off (with the devices trusted to skip it).
    pub async fn disable_two_factor(&self) -> Result<User, ActorError> {
        self.call(|reply| UserMsg::TwoFactor(TwoFactorMsg::Disable(reply)))
            .await
    }
}
