//! Sign-in through a provider: find the user the provider account belongs to, or the user with
//! the provider's email (and link, if the rules allow), or create one. Each step that changes a
//! user runs in that user's actor; creating a user is decided by the store's unique email and
//! unique (provider, account id), so concurrent first sign-ins — in any process — make one user.
use crate::events::{data, Ctx, Emit, Facts, When};
use crate::user::{LinkMode, ProviderAccount};
use crate::{ActorError, Actors, Rule};
use storage::{StoreError, User};

/// One sign-in through a provider.
#[derive(Debug, Clone)]
pub struct SocialSignIn {
    pub account: ProviderAccount,
    /// For a new user.
    pub name: String,
    pub image: Option<String>,
    /// Implicit linking does not need the provider to have verified the email.
    pub trusted: bool,
    /// A new user may be created.
    pub allow_sign_up: bool,
    /// A sign-in through a linked account stores the tokens the provider returned.
    pub update_account_on_sign_in: bool,
    /// A sign-in may link to the user with the provider's email (under the rules of
    /// [`LinkMode::Implicit`]); off: such a sign-in is refused (`AccountNotLinked`).
    pub implicit_linking: bool,
    /// A sign-in through a linked account also writes the provider's name, image and email
    /// over the user's (the provider's `override_user_info_on_sign_in`).
    pub override_user_info: bool,
}

/// Who signed in, and whether the sign-in created them.
#[derive(Debug, Clone)]
pub struct SocialUser {
    pub user: User,
    pub created: bool,
    /// The account was linked to an existing user by its email (implicit linking).
    pub linked: bool,
    /// The user's address before the provider's replaced it (`override_user_info`).
    pub replaced_email: Option<String>,
}

impl Actors {
    /// `ctx`'s notes are kept with the decision that made them true (see [`When`]).
    pub async fn social_sign_in(
        &self,
        s: &SocialSignIn,
        ctx: &Ctx,
    ) -> Result<SocialUser, ActorError> {
        let store = &self.shared.store;
        let acc = &s.account;
        // A few rounds: each lost race (a user or an account created meanwhile) changes which
        // branch applies, and the next round takes it.
        for _ in 0..4 {
            if let Some(linked) = store
                .get_account_by_provider(&acc.provider_id, &acc.account_id)
                .await?
            {
                let signed = self
                    .user(linked.user_id.clone())
                    .with(ctx.clone())
                    .signed_in_with(
                        acc,
                        s.update_account_on_sign_in,
                        s.override_user_info
                            .then_some((s.name.as_str(), s.image.as_deref())),
                    )
                    .await
                    .map_err(|e| match e {
                        ActorError::NotFound => ActorError::Refused(Rule::UserGone),
                        other => other,
                    })?;
                return Ok(SocialUser {
                    user: signed.user,
                    created: false,
                    linked: false,
                    replaced_email: signed.replaced_email,
                });
            }
            match store.get_user_by_email(&acc.email).await? {
                Some(user) => {
                    if !s.implicit_linking {
                        return Err(ActorError::Refused(Rule::AccountNotLinked));
                    }
                    match self
                        .user(user.id.clone())
                        .with(ctx.clone())
                        .link_account(acc, LinkMode::Implicit { trusted: s.trusted })
                        .await
                    {
                        Ok(_) => {}
                        // Linked to another user meanwhile: that user signs in.
                        Err(ActorError::Refused(Rule::AccountLinkedToOtherUser)) => continue,
                        Err(e) => return Err(e),
                    }
                    let user = store
                        .get_user(&user.id)
                        .await?
                        .ok_or(ActorError::Refused(Rule::UserGone))?;
                    return Ok(SocialUser {
                        user,
                        created: false,
                        linked: true,
                        replaced_email: None,
                    });
                }
                None => {
                    if !s.allow_sign_up {
                        return Err(ActorError::Refused(Rule::SignUpDisabled));
                    }
                    let now = self.shared.clock.now();
                    let mut user = User::new(&acc.email, s.name.clone(), s.image.clone(), now);
                    user.email_verified = acc.email_verified;
                    let account = acc.row(&user.id, now);
                    let events = Emit::user(&user.id, now)
                        .domain("user.created", data::user(&user))
                        .request(
                            ctx,
                            &Facts {
                                happened: &[When::Created],
                                user: Some(&user.id),
                                ..Facts::default()
                            },
                        )
                        .done();
                    match store.create_user(&user, Some(&account), &events).await {
                        Ok(()) => {
                            return Ok(SocialUser {
                                user,
                                created: true,
                                linked: false,
                                replaced_email: None,
                            })
                        }
                        Err(StoreError::Conflict(_)) => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Err(ActorError::Unavailable(
            "sign-in raced with too many concurrent changes".into(),
        ))
    }
}

impl Actors {
    /// Records the state of a sign-in or link flow (single use; see [`Actors::take_state`]).
    pub async fn put_state(&self, v: &storage::Verification) -> Result<(), ActorError> {
        Ok(self.shared.store.create_verification(v, &[]).await?)
    }

    /// Takes a flow's state: of concurrent callbacks with one state, exactly one gets it.
    pub async fn take_state(
        &self,
        identifier: &str,
    ) -> Result<Option<storage::Verification>, ActorError> {
        Ok(self.shared.store.consume_verification(identifier).await?)
    }
}
