//! A per-process cache of organization views (what `get-full-organization` and `list-members`
//! read): the organization, its members with their users, its invitations and teams.
//!
//! - **In this process, never stale.** Every change goes through an actor; the handle that
//!   asked for it drops the organization's entry once the actor answered and before its caller
//!   sees the answer, and the actor drops it again after the change (a caller that gave up
//!   waiting is not told, the change may still land). A change of a user (name, email, image,
//!   deletion, a membership gained or left) drops every entry. A read that began before a
//!   change and ends after it does not fill the cache: each fill carries the number of drops
//!   seen when its read began and is refused when any drop happened since.
//! - **Across processes, at most `ttl` old.** Another process's changes are seen once an entry
//!   expires (`organization.view_cache.ttl_ms`; 0 turns the cache off).
//! - **Bounded.** At most `max_entries` organizations, each complete: an organization with
//!   more members than the window a view reads is never cached (it is only marked as too
//!   large, so its reads go straight to the store).
//!
//! A hit answers any member window and the viewer's own membership from the complete member
//! list, without the store; the answers routes write from an entry are kept with it
//! ([`Answers`]), so an unchanged organization's answer is written once, not on every read.
use crate::cache::{CacheConfig, Found, TtlCache};
use std::sync::{Arc, Mutex};
use storage::{Member, OrgId, OrganizationView, User, UserId, ViewQuery};

#[derive(Clone)]
enum Entry {
    /// Every member of the organization (`viewer` unset).
    Complete {
        view: Arc<OrganizationView>,
        answers: Arc<Answers>,
    },
    /// More members than a view reads: not cached.
    TooLarge,
}

/// What [`ViewCache::lookup`] found.
pub(crate) enum Lookup {
    /// The whole organization, from the cache: [`answer`] cuts the view asked for; with the
    /// answers written from it.
    Hit(Arc<OrganizationView>, Arc<Answers>),
    /// Read the store with the query as it is (cache off, or the organization is too large).
    Bypass,
    /// Not cached: read the whole view, then [`ViewCache::fill`] with this ticket.
    Miss(u64),
}

pub(crate) struct ViewCache {
    /// The members a view reads (the membership limit): the window of a fill.
    pub(crate) window: u32,
    entries: TtlCache<OrgId, Entry>,
}

impl ViewCache {
    pub(crate) fn new(config: CacheConfig, window: u32) -> Self {
        Self {
            window,
            entries: TtlCache::new(&config),
        }
    }

    /// Whether it caches anything (a zero `ttl` or `max_entries` turns it off).
    pub(crate) fn enabled(&self) -> bool {
        self.entries.enabled()
    }

    pub(crate) fn lookup(&self, org: &OrgId) -> Lookup {
        match self.entries.lookup(org) {
            Found::Hit(Entry::Complete { view, answers }) => Lookup::Hit(view, answers),
            Found::Hit(Entry::TooLarge) | Found::Off => Lookup::Bypass,
            Found::Miss(ticket) => Lookup::Miss(ticket),
        }
    }

    /// Caches `view` (read with [`Self::window`] members and details, after a
    /// [`Lookup::Miss`] that gave `ticket`) unless a drop happened since.
    pub(crate) fn fill(&self, org: &OrgId, ticket: u64, view: &OrganizationView) {
        let entry = if complete(view) {
            let mut shared = view.clone();
            shared.viewer = None;
            Entry::Complete {
                view: Arc::new(shared),
                answers: Arc::default(),
            }
        } else {
            Entry::TooLarge
        };
        self.entries.fill(org, ticket, entry);
    }

    /// After a change of this organization.
    pub(crate) fn drop_org(&self, org: &OrgId) {
        self.entries.drop_key(org);
    }

    /// After a change that may show in any organization (a user's).
    pub(crate) fn drop_all(&self) {
        self.entries.drop_all();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Answers written from one cached view, by what the route asked (its own key, e.g. its
/// query): they are what the route would write again from the same view, and go with the
/// entry (a change drops both). At most [`ANSWERS_KEPT`] per organization; others are
/// written every time.
#[derive(Default)]
pub struct Answers(Mutex<Vec<(String, bytes::Bytes)>>);

/// Answers kept per organization.
const ANSWERS_KEPT: usize = 8;

impl Answers {
    /// The answer kept for `key`, else the one `write` makes (kept when there is room).
    pub fn get_or_write(&self, key: &str, write: impl FnOnce() -> bytes::Bytes) -> bytes::Bytes {
        if let Ok(kept) = self.0.lock() {
            if let Some((_, b)) = kept.iter().find(|(k, _)| k == key) {
                return b.clone();
            }
        }
        let b = write();
        if let Ok(mut kept) = self.0.lock() {
            if kept.len() < ANSWERS_KEPT && !kept.iter().any(|(k, _)| k == key) {
                kept.push((key.to_owned(), b.clone()));
            }
        }
        b
    }
}

/// Whether `view` holds every member of its organization.
fn complete(view: &OrganizationView) -> bool {
    view.total_members <= view.members.len() as u64
}

/// Whether `view` (a fill's read) holds what `q` asks: every member, or the asked window.
pub(crate) fn covers(view: &OrganizationView, q: &ViewQuery) -> bool {
    complete(view) || q.offset as u64 + q.limit as u64 <= view.members.len() as u64
}

/// The members of `view` in a window: `limit` after the first `offset`.
pub(crate) fn window(
    view: &OrganizationView,
    offset: u32,
    limit: u32,
) -> &[(Member, Option<User>)] {
    let from = (offset as usize).min(view.members.len());
    let to = from.saturating_add(limit as usize).min(view.members.len());
    &view.members[from..to]
}

/// `user`'s membership among `view`'s members.
pub(crate) fn member_of(view: &OrganizationView, user: &UserId) -> Option<Member> {
    view.members
        .iter()
        .find(|(m, _)| m.user_id == *user)
        .map(|(m, _)| m.clone())
}

/// What `q` reads, cut from a view that [`covers`] it (the viewer's membership from the member
/// list when the view is complete, else as the view read it).
pub(crate) fn answer(view: &OrganizationView, q: &ViewQuery) -> OrganizationView {
    let members = window(view, q.offset, q.limit).to_vec();
    let viewer = match &view.viewer {
        Some(m) if m.user_id == q.viewer => Some(m.clone()),
        _ => member_of(view, &q.viewer),
    };
    OrganizationView {
        organization: view.organization.clone(),
        viewer,
        members,
        total_members: view.total_members,
        invitations: if q.details {
            view.invitations.clone()
        } else {
            Vec::new()
        },
        teams: if q.details {
            view.teams.clone()
        } else {
            Vec::new()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use storage::{Member, MemberId, Organization, User};

    /// An organization of `n` members, read with `window` members and details.
    fn view(n: usize, window: usize) -> (OrganizationView, Vec<User>) {
        let now = chrono::Utc::now();
        let org = Organization::new("Acme".into(), "acme".into(), None, None, true, now);
        let users: Vec<User> = (0..n)
            .map(|i| User::new(&format!("u{i}@example.com"), format!("U{i}"), None, now))
            .collect();
        let members: Vec<_> = users
            .iter()
            .take(window)
            .map(|u| {
                let m = Member {
                    id: MemberId::generate(),
                    organization_id: org.id.clone(),
                    user_id: u.id.clone(),
                    role: "member".into(),
                    team_id: None,
                    created_at: now,
                };
                (m, Some(u.clone()))
            })
            .collect();
        let v = OrganizationView {
            organization: org,
            viewer: members.first().map(|(m, _)| m.clone()),
            members,
            total_members: n as u64,
            invitations: Vec::new(),
            teams: Vec::new(),
        };
        (v, users)
    }

    fn q(viewer: &User, offset: u32, limit: u32, details: bool) -> ViewQuery {
        ViewQuery {
            viewer: viewer.id.clone(),
            offset,
            limit,
            details,
        }
    }

    fn cache(ttl_ms: u64, max_entries: usize) -> ViewCache {
        ViewCache::new(
            CacheConfig {
                ttl: Duration::from_millis(ttl_ms),
                max_entries,
            },
            100,
        )
    }

    /// The ticket of a lookup that must miss.
    fn miss(c: &ViewCache, org: &OrgId) -> u64 {
        let Lookup::Miss(t) = c.lookup(org) else {
            panic!("cached")
        };
        t
    }

    /// The entry of a lookup that must hit.
    fn hit(c: &ViewCache, org: &OrgId) -> Arc<OrganizationView> {
        let Lookup::Hit(v, _) = c.lookup(org) else {
            panic!("not cached")
        };
        v
    }

    #[test]
    fn a_hit_answers_any_window_and_any_viewer() {
        let c = cache(60_000, 8);
        let (v, users) = view(5, 100);
        let org = v.organization.id.clone();
        let t = miss(&c, &org);
        c.fill(&org, t, &v);
        let h = hit(&c, &org);
        let h = answer(&h, &q(&users[3], 1, 2, false));
        assert_eq!(h.members.len(), 2);
        assert_eq!(h.members[0].0.user_id, users[1].id);
        assert_eq!(h.total_members, 5);
        // The viewer is whoever asks, not who filled the cache.
        assert_eq!(h.viewer.map(|m| m.user_id), Some(users[3].id.clone()));
        let stranger = User::new("x@example.com", "X".into(), None, chrono::Utc::now());
        let h = hit(&c, &org);
        let h = answer(&h, &q(&stranger, 0, 100, true));
        assert_eq!(h.viewer, None);
        assert_eq!(h.members.len(), 5);
    }

    #[test]
    fn a_read_that_began_before_a_change_does_not_fill() {
        let c = cache(60_000, 8);
        let (v, _) = view(3, 100);
        let (other, _) = view(3, 100);
        let org = v.organization.id.clone();
        for change in [
            Box::new(|c: &ViewCache| c.drop_org(&org)) as Box<dyn Fn(&ViewCache)>,
            Box::new(|c: &ViewCache| c.drop_org(&other.organization.id)),
            Box::new(|c: &ViewCache| c.drop_all()),
        ] {
            let t = miss(&c, &org);
            change(&c); // The change lands while the read runs.
            c.fill(&org, t, &v);
            assert!(matches!(c.lookup(&org), Lookup::Miss(_)));
        }
        // A change after the fill drops it.
        let t = miss(&c, &org);
        c.fill(&org, t, &v);
        assert!(matches!(c.lookup(&org), Lookup::Hit(..)));
        c.drop_org(&org);
        assert!(matches!(c.lookup(&org), Lookup::Miss(_)));
    }

    #[test]
    fn entries_expire_and_are_bounded() {
        let c = cache(500, 2);
        let views: Vec<_> = (0..3).map(|_| view(2, 100)).collect();
        for (v, _) in &views {
            let org = &v.organization.id;
            let t = miss(&c, org);
            c.fill(org, t, v);
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(c.len(), 2);
        // The oldest went.
        let (v0, _) = &views[0];
        assert!(matches!(c.lookup(&v0.organization.id), Lookup::Miss(_)));
        std::thread::sleep(Duration::from_millis(550));
        let (v2, _) = &views[2];
        assert!(matches!(c.lookup(&v2.organization.id), Lookup::Miss(_)));
    }

    #[test]
    fn a_large_organization_is_never_cached_and_zero_ttl_is_off() {
        let c = cache(60_000, 8);
        let (v, users) = view(150, 100);
        let org = v.organization.id.clone();
        let t = miss(&c, &org);
        assert!(covers(&v, &q(&users[0], 90, 10, false)));
        assert!(!covers(&v, &q(&users[0], 95, 10, false)));
        c.fill(&org, t, &v);
        assert!(matches!(c.lookup(&org), Lookup::Bypass));
        let off = cache(0, 8);
        assert!(matches!(off.lookup(&org), Lookup::Bypass));
    }
}
