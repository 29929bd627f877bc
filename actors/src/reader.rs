//! What the HTTP layer may read of the store: reads only. Every write goes through an actor
//! (or one of the few owner-less writes on [`crate::Actors`]), so a handler cannot write around
//! the actors by accident: the type does not offer it.
use crate::cache::{Found, UserCache};
use crate::views::{self, Lookup, ViewCache};
use std::sync::Arc;
use storage::*;

/// A read-only view of the store.
#[derive(Clone)]
pub struct Reader {
    pub(crate) store: DynStore,
    pub(crate) views: Arc<ViewCache>,
    pub(crate) users: Arc<UserCache>,
}

macro_rules! reads {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        impl Reader {
            $(
                $(#[$doc])*
                pub async fn $name(&self, $($arg: $ty),*) -> StoreResult<$ret> {
                    self.store.$name($($arg),*).await
                }
            )*
        }
    };
}

reads! {
    /// Reachable, at this build's schema, writable (see `HealthStore`).
    check_health() -> ();
    get_user(id: &UserId) -> Option<User>;
    /// The users of `ids` that exist, in no particular order.
    get_users(ids: &[UserId]) -> Vec<User>;
    get_user_by_email(email: &str) -> Option<User>;
    list_accounts(user: &UserId) -> Vec<Account>;
    /// The user's second factor (its secret sealed, its backup codes hashed).
    get_two_factor(user: &UserId) -> Option<TwoFactor>;
    /// The user's passkeys, oldest first.
    list_passkeys(user: &UserId) -> Vec<Passkey>;
    get_passkey_by_credential(credential_id: &str) -> Option<Passkey>;
    get_api_key(id: &ApiKeyId) -> Option<ApiKey>;
    /// The key whose SHA-256 is `key_hash`.
    find_api_key(key_hash: &str) -> Option<ApiKey>;
    /// The keys of a user (their own) or of an organization, oldest first.
    list_api_keys(reference: &str) -> Vec<ApiKey>;
    get_session(token: &str) -> Option<Session>;
    /// The session and its user (`None`: gone) in one round trip where the store can.
    get_session_with_user(token: &str) -> Option<(Session, Option<User>)>;
    list_sessions(user: &UserId) -> Vec<Session>;
    get_verification(identifier: &str) -> Option<Verification>;
    get_organization(id: &OrgId) -> Option<Organization>;
    get_organization_by_slug(slug: &str) -> Option<Organization>;
    list_user_organizations(user: &UserId) -> Vec<Organization>;
    get_member(org: &OrgId, user: &UserId) -> Option<Member>;
    get_member_by_id(org: &OrgId, id: &MemberId) -> Option<Member>;
    /// `limit` members after the first `offset`, oldest first.
    list_members_window(org: &OrgId, offset: u32, limit: u32) -> Vec<Member>;
    count_members(org: &OrgId) -> u64;
    get_invitation(id: &InvitationId) -> Option<Invitation>;
    list_invitations(org: &OrgId) -> Vec<Invitation>;
    list_invitations_by_email(email: &str) -> Vec<Invitation>;
    get_team(id: &TeamId) -> Option<Team>;
    list_teams(org: &OrgId) -> Vec<Team>;
    list_team_members(team: &Team) -> Vec<TeamMember>;
    list_user_teams(user: &UserId) -> Vec<Team>;
    get_role(org: &OrgId, name: &str) -> Option<OrganizationRole>;
    list_roles(org: &OrgId) -> Vec<OrganizationRole>;
    list_key_pairs() -> Vec<KeyPair>;
    /// One page of the audit log.
    list_audit(q: &AuditQuery) -> Page<AuditEvent>;
}

/// An organization as this process's view cache holds it: every member (with their users),
/// invitations and teams, the viewer's membership, and the answers written from it.
pub struct CachedView {
    pub view: Arc<OrganizationView>,
    pub viewer: Option<Member>,
    pub answers: Arc<views::Answers>,
}

impl CachedView {
    /// The window of members a list asks for: `limit` after the first `offset`.
    pub fn members(&self, offset: u32, limit: u32) -> &[(Member, Option<User>)] {
        views::window(&self.view, offset, limit)
    }
}

impl Reader {
    /// The session of `token` (always as stored now: a revoked session is gone at once) and
    /// its user (`None`: gone). Unless `fresh`, the user comes from this process's user cache
    /// when it holds it (see `cache`: never stale after a change made through this process,
    /// dropped when another process's `user.updated` / `user.deleted` is read, at most
    /// `ttl` old), so a session resolved again costs one read; `fresh` (or the cache off)
    /// reads both in one round trip where the store can.
    pub async fn session_with_user(
        &self,
        token: &str,
        fresh: bool,
    ) -> StoreResult<Option<(Session, Option<User>)>> {
        if fresh || !self.users.enabled() {
            return self.store.get_session_with_user(token).await;
        }
        let Some(session) = self.store.get_session(token).await? else {
            return Ok(None);
        };
        let user = self.cached_user(&session.user_id).await?;
        Ok(Some((session, user)))
    }

    /// A user from this process's user cache when it holds it, else from the store (which
    /// fills the cache): as fresh as the users of sessions are (see `cache`). For what an
    /// answer shows of a user (a member's name, email and image), never for a decision.
    pub async fn cached_user(&self, id: &UserId) -> StoreResult<Option<User>> {
        let ticket = match self.users.lookup(id) {
            Found::Hit(user) => return Ok(Some(User::clone(&user))),
            Found::Miss(ticket) => ticket,
            Found::Off => 0,
        };
        let user = self.store.get_user(id).await?;
        if let Some(u) = &user {
            self.users.fill(id, ticket, Arc::new(u.clone()));
        }
        Ok(user)
    }

    /// The organization from this process's view cache, when it holds it (`None`: read it
    /// with [`Reader::organization_view`], which fills the cache). Fresh as every read of the
    /// cache is (see `views`).
    pub fn cached_view(&self, org: &OrgId, viewer: &UserId) -> Option<CachedView> {
        let Lookup::Hit(view, answers) = self.views.lookup(org) else {
            return None;
        };
        let viewer = views::member_of(&view, viewer);
        Some(CachedView {
            view,
            viewer,
            answers,
        })
    }

    /// An organization, the viewer's membership, a window of members with their users and
    /// (with `details`) its invitations and teams: from this process's view cache when it
    /// holds the organization (see `views`: never stale after a change made in this process,
    /// at most `ttl` old after one made elsewhere), else in one round trip where the store can.
    pub async fn organization_view(
        &self,
        org: &OrgId,
        q: &ViewQuery,
    ) -> StoreResult<Option<OrganizationView>> {
        let ticket = match self.views.lookup(org) {
            Lookup::Hit(view, _) => return Ok(Some(views::answer(&view, q))),
            Lookup::Bypass => return self.store.organization_view(org, q).await,
            Lookup::Miss(ticket) => ticket,
        };
        // What the cache holds: the first window of members, with the details.
        let whole = ViewQuery {
            viewer: q.viewer.clone(),
            offset: 0,
            limit: self.views.window,
            details: true,
        };
        let Some(view) = self.store.organization_view(org, &whole).await? else {
            return Ok(None);
        };
        self.views.fill(org, ticket, &view);
        if views::covers(&view, q) {
            Ok(Some(views::answer(&view, q)))
        } else {
            self.store.organization_view(org, q).await
        }
    }
}
