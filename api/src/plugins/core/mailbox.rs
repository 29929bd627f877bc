//! A sign-in by a code or link sent to the address (the email-OTP and magic-link plugins):
//! the user — signed up on the spot when the address is new and sign-up is allowed — proves
//! the mailbox, which on an unverified address also removes the password set before and ends
//! every earlier session (the user actor's `sign_in_by_mail`). A user with two-factor
//! sign-in on gets the second-factor challenge instead of a session, as with a password.
use crate::audit::{action, Event, Origin};
use crate::dto::Authed;
use crate::error::{ApiResult, Code};
use crate::http::PendingCookies;
use crate::session::Sessions;
use crate::AppState;
use actors::ActorError;
use poem::Request;
use storage::User;

/// How a sign-in by mail ended.
pub(crate) enum MailSignedIn {
    /// Signed in (`created`: the address was signed up by this sign-in).
    Session { authed: Box<Authed>, created: bool },
    /// The second factor comes first: the challenge cookie is set; its methods.
    SecondFactor(Vec<String>),
}

/// A new user for a sign-in by mail: `None` when the address has none and sign-up is off.
pub(crate) struct NewUser<'a> {
    pub name: &'a str,
    pub image: Option<&'a str>,
    pub allowed: bool,
}

/// The user of `email`, signed up (verified: the code or link proved the address) when there
/// is none; `UserNotFound` when there is none and sign-up is off. A concurrent sign-up of the
/// same address answers the user it made.
pub(crate) async fn user_for(
    state: &AppState,
    req: &Request,
    email: &str,
    new: NewUser<'_>,
    method: &'static str,
) -> ApiResult<(User, bool)> {
    if let Some(u) = state.reader.get_user_by_email(email).await? {
        return Ok((u, false));
    }
    if !new.allowed {
        return Err(Code::UserNotFound.into());
    }
    let mut user = User::new(
        email,
        new.name.to_owned(),
        new.image.map(str::to_owned),
        state.clock.now(),
    );
    user.email_verified = true;
    let ctx = state.audit.noted(
        Event::new(action::SIGN_UP, &Origin::of(req))
            .own(&user.id)
            .detail("method", method),
    );
    match state.actors.sign_up(&user, None, &ctx).await {
        Ok(()) => Ok((user, true)),
        Err(ActorError::Refused(actors::Rule::UserExists)) => {
            let u = state
                .reader
                .get_user_by_email(email)
                .await?
                .ok_or(Code::FailedToCreateUser)?;
            Ok((u, false))
        }
        Err(e) => Err(e.into()),
    }
}

/// Signs `user` in by a proved mailbox (see the module).
pub(crate) async fn sign_in(
    state: &AppState,
    req: &Request,
    cookies: &PendingCookies,
    (user, created): (User, bool),
    method: &'static str,
) -> ApiResult<MailSignedIn> {
    let ev = Event::new(action::SIGN_IN, &Origin::of(req))
        .target(user.email.clone())
        .detail("method", method)
        .own(&user.id);
    let handle = state.actors.user(user.id.clone());
    if state.two_factor.needed(req, &user, cookies).await? {
        // The proof is applied now; the sign-in is recorded when the second step ends it.
        let done = handle.sign_in_by_mail(None).await?;
        if done.first_proof {
            state.sessions.note_revocation(&user.id);
        }
        let methods = state.two_factor.begin(&done.user, true, cookies).await?;
        return Ok(MailSignedIn::SecondFactor(methods));
    }
    let ctx = state
        .audit
        .noted(ev.clone().fill(actors::Fill::TargetSession));
    let done = handle
        .with(ctx)
        .sign_in_by_mail(Some(Sessions::new_session(req, true)))
        .await;
    let done = state.audit.audited(ev, done.map_err(Into::into)).await?;
    if done.first_proof {
        state.sessions.note_revocation(&user.id);
    }
    let session = done.session.ok_or(Code::FailedToCreateSession)?;
    let authed = Authed {
        session,
        user: done.user,
    };
    cookies.push(state.sessions.session_cookies(&authed, false));
    state.credentials.signed_in();
    Ok(MailSignedIn::Session {
        authed: Box::new(authed),
        created,
    })
}
