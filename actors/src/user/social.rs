//! A user's social accounts: linking a provider's account to the user (implicitly, when a
//! sign-in finds the user by email; explicitly, through link-social) and storing what the
//! provider returned on a later sign-in. Decided in the user's actor, on the user as stored
//! now; the store's unique (provider, account id) decides between processes.
use super::{contended, Reply, UserActor};
use crate::events::{data, Ctx, Emit, Facts, When};
use crate::runtime::Attempts;
use crate::{ActorError, Rule};
use chrono::{DateTime, Utc};
use storage::{Account, AccountId, StoreError, User, UserId};

/// Tokens a provider answered, as they are to be stored (the HTTP layer encrypts them first).
/// `None` leaves the stored value as it is.
#[derive(Debug, Clone, Default)]
pub struct ProviderTokens {
    pub access_token: Option<String>,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
    pub access_token_expires_at: Option<DateTime<Utc>>,
    pub refresh_token_expires_at: Option<DateTime<Utc>>,
    /// Comma-joined scopes.
    pub scope: Option<String>,
}

/// An account at a provider, as the provider describes it.
#[derive(Debug, Clone)]
pub struct ProviderAccount {
    pub provider_id: String,
    /// The provider's id of the account (never empty).
    pub account_id: String,
    /// The provider's email, lower-cased.
    pub email: String,
    /// Whether the provider says it verified that email.
    pub email_verified: bool,
    pub tokens: ProviderTokens,
}

impl ProviderAccount {
    /// A new account row of `user` for this provider account, with its tokens.
    pub(crate) fn row(&self, user: &UserId, now: DateTime<Utc>) -> Account {
        let t = &self.tokens;
        Account {
            id: AccountId::generate(),
            user_id: user.clone(),
            provider_id: self.provider_id.clone(),
            account_id: self.account_id.clone(),
            password: None,
            access_token: t.access_token.clone(),
            refresh_token: t.refresh_token.clone(),
            id_token: t.id_token.clone(),
            access_token_expires_at: t.access_token_expires_at,
            refresh_token_expires_at: t.refresh_token_expires_at,
            scope: t.scope.clone(),
            created_at: now,
            updated_at: now,
        }
    }
}

/// How a provider account comes to be linked to an existing user.
#[derive(Debug, Clone, Copy)]
pub enum LinkMode {
    /// A sign-in found the user by the provider's email: linked only when the provider is
    /// trusted or verified the email, **and** the user's own email is verified (otherwise
    /// whoever registered the address first, without proving it, would gain the account).
    Implicit { trusted: bool },
    /// The signed-in user asked for it (link-social): the provider must be trusted or have
    /// verified the email, and the emails must match unless `allow_different_emails`.
    Explicit {
        trusted: bool,
        allow_different_emails: bool,
    },
}

/// What a link did.
#[derive(Debug, Clone)]
pub enum Linked {
    /// A new account row.
    Created(Account),
    /// The account was this user's already: its tokens were updated (and scopes merged).
    Updated(Account),
}

pub(crate) enum SocialMsg {
    Link {
        account: Box<ProviderAccount>,
        mode: LinkMode,
        reply: Reply<Linked>,
    },
    SignedIn {
        account: Box<ProviderAccount>,
        update_tokens: bool,
        /// The provider's name and image, to write over the user's (with its email).
        override_info: Option<(String, Option<String>)>,
        reply: Reply<SignedIn>,
    },
    Store {
        id: AccountId,
        tokens: ProviderTokens,
        reply: Reply<Account>,
    },
}

/// The user after a sign-in through a linked account, and the address the provider's replaced
/// (`override_user_info_on_sign_in`), if it did.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user: User,
    pub replaced_email: Option<String>,
}

impl UserActor {
    pub(super) async fn social(&self, id: &UserId, msg: SocialMsg, ctx: &Ctx) {
        match msg {
            SocialMsg::Link {
                account,
                mode,
                reply,
            } => {
                let _ = reply.send(self.link(id, &account, mode, ctx).await);
            }
            SocialMsg::SignedIn {
                account,
                update_tokens,
                override_info,
                reply,
            } => {
                let r = self
                    .signed_in(id, &account, update_tokens, override_info, ctx)
                    .await;
                let _ = reply.send(r);
            }
            SocialMsg::Store {
                id: row,
                tokens,
                reply,
            } => {
                let _ = reply.send(self.store_tokens(id, &row, &tokens).await);
            }
        }
    }

    async fn link(
        &self,
        id: &UserId,
        acc: &ProviderAccount,
        mode: LinkMode,
        ctx: &Ctx,
    ) -> Result<Linked, ActorError> {
        let store = &self.shared.store;
        // Kept with the account's row: linked (or, linked already, its tokens updated).
        let events = Emit::user(id, self.now())
            .request(
                ctx,
                &Facts {
                    happened: &[When::Linked],
                    user: Some(id),
                    ..Facts::default()
                },
            )
            .done();
        let user = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
        match mode {
            LinkMode::Implicit { trusted } => {
                if !(trusted || acc.email_verified)
                    || !user.email_verified
                    || user.email != acc.email
                    // A password no proof of the mailbox followed: not the owner's account.
                    || self.password_unproven(id).await?
                {
                    return Err(ActorError::Refused(Rule::AccountNotLinked));
                }
            }
            LinkMode::Explicit {
                trusted,
                allow_different_emails,
            } => {
                if !(trusted || acc.email_verified) {
                    return Err(ActorError::Refused(Rule::LinkingNotAllowed));
                }
                if !allow_different_emails && user.email != acc.email {
                    return Err(ActorError::Refused(Rule::EmailDoesNotMatch));
                }
            }
        }
        let mut attempts = Attempts::new();
        while attempts.next().await {
            if let Some(existing) = store
                .get_account_by_provider(&acc.provider_id, &acc.account_id)
                .await?
            {
                if &existing.user_id != id {
                    return Err(ActorError::Refused(Rule::AccountLinkedToOtherUser));
                }
                let mut tokens = acc.tokens.clone();
                tokens.scope = merge_scopes(existing.scope.as_deref(), tokens.scope.as_deref());
                return Ok(Linked::Updated(
                    self.write_tokens(existing, &tokens, &events).await?,
                ));
            }
            let row = acc.row(id, self.now());
            match store.create_account(&row, &events).await {
                Ok(()) => return Ok(Linked::Created(row)),
                // Linked meanwhile (to whom is decided on the next round).
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(contended())
    }

    /// A sign-in through an account of this user: stores the tokens the provider returned
    /// (unless configured not to) and, when the provider verified the user's own address,
    /// marks it verified. The scope is never changed by a sign-in.
    async fn signed_in(
        &self,
        id: &UserId,
        acc: &ProviderAccount,
        update_tokens: bool,
        override_info: Option<(String, Option<String>)>,
        ctx: &Ctx,
    ) -> Result<SignedIn, ActorError> {
        let store = &self.shared.store;
        if update_tokens {
            let existing = store
                .get_account_by_provider(&acc.provider_id, &acc.account_id)
                .await?
                .filter(|a| &a.user_id == id)
                .ok_or(ActorError::Refused(Rule::AccountNotFound))?;
            let mut tokens = acc.tokens.clone();
            tokens.scope = None;
            self.write_tokens(existing, &tokens, &[]).await?;
        }
        // The provider's address replaces the user's only when it is a real one and no other
        // user has it (then the rest of the override still applies).
        let provider_email = acc.email.to_lowercase();
        let mut take_email =
            override_info.is_some() && !provider_email.ends_with(".placeholder.invalid");
        let mut attempts = Attempts::new();
        while attempts.next().await {
            let mut user = store.get_user(id).await?.ok_or(ActorError::NotFound)?;
            let before = user.clone();
            if let Some((name, image)) = &override_info {
                if !name.trim().is_empty() {
                    user.name = name.clone();
                }
                if image.is_some() {
                    user.image = image.clone();
                }
                if take_email && user.email != provider_email {
                    user.email = provider_email.clone();
                    user.email_verified = acc.email_verified;
                }
            }
            if user.email == acc.email.to_lowercase() && acc.email_verified {
                user.email_verified = true;
            }
            if user.name == before.name
                && user.image == before.image
                && user.email == before.email
                && user.email_verified == before.email_verified
            {
                return Ok(SignedIn {
                    user,
                    replaced_email: None,
                });
            }
            user.updated_at = self.now();
            user.version += 1;
            let replaced = (user.email != before.email).then_some(When::EmailReplaced);
            let events = Emit::user(id, self.now())
                .domain("user.updated", data::user(&user))
                .request(
                    ctx,
                    &Facts {
                        happened: replaced.as_slice(),
                        email_change: Some((&before.email, &user.email)),
                        user: Some(id),
                        ..Facts::default()
                    },
                )
                .done();
            match store.update_user(&user, &events).await {
                Ok(()) => {
                    let replaced_email = (user.email != before.email).then_some(before.email);
                    return Ok(SignedIn {
                        user,
                        replaced_email,
                    });
                }
                Err(StoreError::ConcurrentModification) => continue,
                Err(StoreError::Conflict(_)) if user.email != before.email => {
                    tracing::info!(user = %id, provider = %acc.provider_id,
                        "the provider's address belongs to another user: kept the user's own");
                    take_email = false;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(contended())
    }

    /// Stores refreshed tokens on one of this user's accounts.
    async fn store_tokens(
        &self,
        id: &UserId,
        row: &AccountId,
        tokens: &ProviderTokens,
    ) -> Result<Account, ActorError> {
        let existing = self
            .shared
            .store
            .list_accounts(id)
            .await?
            .into_iter()
            .find(|a| &a.id == row)
            .ok_or(ActorError::Refused(Rule::AccountNotFound))?;
        self.write_tokens(existing, tokens, &[]).await
    }

    /// Writes each token the provider returned over the stored one (a refresh token survives
    /// an answer without one).
    async fn write_tokens(
        &self,
        mut a: Account,
        t: &ProviderTokens,
        events: &[storage::Event],
    ) -> Result<Account, ActorError> {
        if let Some(v) = &t.access_token {
            a.access_token = Some(v.clone());
            // A new access token without an expiry has an unknown one.
            a.access_token_expires_at = t.access_token_expires_at;
        }
        if let Some(v) = &t.refresh_token {
            a.refresh_token = Some(v.clone());
        }
        if t.refresh_token_expires_at.is_some() {
            a.refresh_token_expires_at = t.refresh_token_expires_at;
        }
        if let Some(v) = &t.id_token {
            a.id_token = Some(v.clone());
        }
        if let Some(v) = &t.scope {
            a.scope = Some(v.clone());
        }
        a.updated_at = self.now();
        self.shared.store.update_account(&a, events).await?;
        Ok(a)
    }
}

/// The union of two comma-joined scope lists, in stored order.
fn merge_scopes(stored: Option<&str>, new: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for s in stored
        .into_iter()
        .chain(new)
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    (!out.is_empty()).then(|| out.join(","))
}

impl super::UserHandle {
    /// Links a provider account to this user (see [`LinkMode`]).
    pub async fn link_account(
        &self,
        account: &ProviderAccount,
        mode: LinkMode,
    ) -> Result<Linked, ActorError> {
        self.call(|reply| {
            super::UserMsg::Social(SocialMsg::Link {
                account: Box::new(account.clone()),
                mode,
                reply,
            })
        })
        .await
    }

    /// A sign-in through one of this user's provider accounts (see the actor method).
    pub async fn signed_in_with(
        &self,
        account: &ProviderAccount,
        update_tokens: bool,
        override_info: Option<(&str, Option<&str>)>,
    ) -> Result<SignedIn, ActorError> {
        let override_info = override_info.map(|(n, i)| (n.to_owned(), i.map(str::to_owned)));
        self.call(|reply| {
            super::UserMsg::Social(SocialMsg::SignedIn {
                account: Box::new(account.clone()),
                update_tokens,
                override_info: override_info.clone(),
                reply,
            })
        })
        .await
    }

    /// Stores refreshed tokens on the account row `id` of this user.
    pub async fn store_tokens(
        &self,
        id: &AccountId,
        tokens: &ProviderTokens,
    ) -> Result<Account, ActorError> {
        self.call(|reply| {
            super::UserMsg::Social(SocialMsg::Store {
                id: id.clone(),
                tokens: tokens.clone(),
                reply,
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn scopes_merge_in_stored_order_without_repeats() {
        assert_eq!(
            super::merge_scopes(Some("a,b"), Some("b,c")).as_deref(),
            Some("a,b,c")
        );
        assert_eq!(super::merge_scopes(None, None), None);
        assert_eq!(super::merge_scopes(None, Some("x")).as_deref(), Some("x"));
    }
}
