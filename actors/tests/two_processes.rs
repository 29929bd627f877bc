//! Two Gatehouse processes on one store, as several servers share one database: each has its
//! own actor system (so its own actor for an organization) and its own connection to the same
//! SQLite file, or to the same keyspace of the CQL node (`SCYLLA_URI`). The organization rules must hold against each other, not just inside one
//! process: they rest on the organization's version, compare-and-set by every write.
use actors::{Acting, ActorConfig, ActorError, Actors, RoleChange, Rule, TeamChange, UserPatch};
use futures::future::join_all;
use std::sync::Arc;
use storage::scylla::testing::{throwaway_keyspace, DropKeyspace};
use storage::scylla::ScyllaStore;
use storage::sqlite::SqliteStore;
use storage::*;

struct Two {
    a: Actors,
    b: Actors,
    store: DynStore,
    _shared: Shared,
}

enum Backend {
    Sqlite,
    Scylla,
}

/// What the two processes share, kept until the test ends.
enum Shared {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    /// A keyspace of the CQL node, dropped at the end.
    Scylla(#[allow(dead_code)] DropKeyspace),
}

/// Two actor systems ("processes"), each with its own connection to one store; `None` when the
/// CQL node is not configured here (`SCYLLA_URI`; `REQUIRE_SCYLLA=1` makes that an error).
async fn two(backend: Backend, limit: u32) -> Option<Two> {
    two_with(backend, |c| c.org.membership_limit = limit).await
}

/// [`two`], each process's configuration changed by `tune`.
async fn two_with(backend: Backend, tune: impl Fn(&mut ActorConfig)) -> Option<Two> {
    let cfg = || {
        let mut c = ActorConfig::default();
        tune(&mut c);
        c
    };
    let (store_a, store_b, shared): (DynStore, DynStore, Shared) = match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("shared.db");
            (
                Arc::new(SqliteStore::open(&path).await.unwrap()),
                Arc::new(SqliteStore::open(&path).await.unwrap()),
                Shared::Sqlite(dir),
            )
        }
        Backend::Scylla => {
            let (opts, guard) = throwaway_keyspace("gh_two")?;
            let a = ScyllaStore::migrate(&opts).await.unwrap();
            let b = ScyllaStore::connect(&opts).await.unwrap();
            (Arc::new(a), Arc::new(b), Shared::Scylla(guard))
        }
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    Some(Two {
        a: Actors::start(store_a.clone(), clock.clone(), cfg())
            .await
            .unwrap(),
        b: Actors::start(store_b, clock, cfg()).await.unwrap(),
        store: store_a,
        _shared: shared,
    })
}

async fn new_user(store: &DynStore) -> User {
    let now = SystemClock.now();
    let u = User {
        email_verified: true,
        ..User::new(
            &format!("{}@example.com", random_lower_alnum(12)),
            "U".into(),
            None,
            now,
        )
    };
    store.create_user(&u, None, &[]).await.unwrap();
    u
}

/// An organization created by `owner` (role `owner`).
async fn new_org(t: &Two, owner: &User) -> Organization {
    let now = SystemClock.now();
    let org = Organization::new(
        "O".into(),
        format!("o-{}", random_lower_alnum(12)),
        None,
        None,
        true,
        now,
    );
    let m = Member {
        id: MemberId::generate(),
        organization_id: org.id.clone(),
        user_id: owner.id.clone(),
        role: "owner".into(),
        team_id: None,
        created_at: now,
    };
    t.store
        .create_organization(&org, &m, None, &[])
        .await
        .unwrap();
    org
}

fn owners(members: &[Member]) -> usize {
    members
        .iter()
        .filter(|m| m.role.split(',').any(|r| r.trim() == "owner"))
        .count()
}

macro_rules! on_both_backends {
    ($($race:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $race() {
                    super::$race(super::Backend::Sqlite).await;
                }
            )*
        }
        mod cql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $race() {
                    super::$race(super::Backend::Scylla).await;
                }
            )*
        }
    };
}

on_both_backends!(
    two_consumers_handle_each_event_once,
    two_last_owners_removing_each_other_leave_one,
    joins_from_two_processes_stop_at_the_membership_limit,
    a_role_revoked_in_one_process_stops_granting_in_the_other,
    organizations_created_from_two_processes_stop_at_the_user_limit,
    unlinking_from_two_processes_keeps_the_last_account,
    a_role_is_never_deleted_while_another_process_assigns_it,
    removing_teams_from_two_processes_keeps_the_last_one,
    profile_changes_from_two_processes_are_both_kept,
    a_membership_changed_in_one_process_counts_in_the_others_next_decision,
    a_user_changed_in_one_process_shows_in_the_others_sessions,
);

/// The two last owners remove each other, one from each process: one stays, every time.
async fn two_last_owners_removing_each_other_leave_one(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..200 {
        let (o1, o2) = (new_user(&t.store).await, new_user(&t.store).await);
        let org = new_org(&t, &o1).await;
        let m2 =
            t.a.org(org.id.clone())
                .add_member(Acting::Server, o2.id.clone(), "owner")
                .await
                .unwrap();
        let m1 = t.store.get_member(&org.id, &o1.id).await.unwrap().unwrap();
        let (ha, hb) = (t.a.org(org.id.clone()), t.b.org(org.id.clone()));
        let (ra, rb) = tokio::join!(
            ha.remove_member(Acting::User(o1.id.clone()), m2.id.clone()),
            hb.remove_member(Acting::User(o2.id.clone()), m1.id.clone()),
        );
        let members = t.store.list_all_members(&org.id).await.unwrap();
        assert_eq!(owners(&members), 1, "trial {trial}: {ra:?} / {rb:?}");
        assert_eq!(
            [&ra, &rb].iter().filter(|r| r.is_ok()).count(),
            1,
            "trial {trial}"
        );
        let refused = if ra.is_err() { ra } else { rb };
        // Refused as the last owner, or — removed first — as no longer a member.
        assert!(
            matches!(
                refused,
                Err(ActorError::Refused(Rule::LastOwner | Rule::NotAMember))
            ),
            "trial {trial}: {refused:?}"
        );
        let o = t.store.get_organization(&org.id).await.unwrap().unwrap();
        assert_eq!((o.member_count, o.owner_count), (1, 1), "trial {trial}");
    }
}

/// Joins split across both processes never pass the membership limit.
async fn joins_from_two_processes_stop_at_the_membership_limit(backend: Backend) {
    let limit = 4;
    let Some(t) = two(backend, limit).await else {
        return;
    };
    for trial in 0..200 {
        let owner = new_user(&t.store).await;
        let org = new_org(&t, &owner).await;
        let mut joiners = Vec::new();
        for _ in 0..6 {
            joiners.push(new_user(&t.store).await);
        }
        let tasks = joiners.iter().enumerate().map(|(i, u)| {
            let system = if i % 2 == 0 { &t.a } else { &t.b };
            let h = system.org(org.id.clone());
            let id = u.id.clone();
            async move { h.add_member(Acting::Server, id, "member").await }
        });
        let results = join_all(tasks).await;
        let joined = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(joined as u32, limit - 1, "trial {trial}: {results:?}");
        assert!(results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(ActorError::Refused(Rule::MembershipLimit)))));
        assert_eq!(
            t.store.count_members(&org.id).await.unwrap(),
            u64::from(limit),
            "trial {trial}"
        );
        let o = t.store.get_organization(&org.id).await.unwrap().unwrap();
        assert_eq!(o.member_count, limit, "trial {trial}");
    }
}

/// A permission taken away from a custom role in one process stops granting in the other at
/// once, however busy that process's actor has been (its cached policy is checked against the
/// organization's roles version before every decision).
async fn a_role_revoked_in_one_process_stops_granting_in_the_other(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..50 {
        let owner = new_user(&t.store).await;
        let org = new_org(&t, &owner).await;
        let inviter = new_user(&t.store).await;
        let perms = |acts: &[&str]| -> policy::Permissions {
            [(
                "invitation".to_string(),
                acts.iter().map(|a| a.to_string()).collect(),
            )]
            .into_iter()
            .collect()
        };
        t.b.org(org.id.clone())
            .role(
                Acting::User(owner.id.clone()),
                RoleChange::Create {
                    role: "inviter".into(),
                    permission: perms(&["create"]),
                },
            )
            .await
            .unwrap();
        t.b.org(org.id.clone())
            .add_member(Acting::Server, inviter.id.clone(), "inviter")
            .await
            .unwrap();
        let as_inviter = Acting::User(inviter.id.clone());
        let invite = |to: String| {
            let h = t.a.org(org.id.clone());
            let acting = as_inviter.clone();
            async move { h.invite(acting, &to, "member", None, false).await }
        };
        // Process A builds (and caches) the policy with the role granting invitations.
        invite(format!("first{trial}@example.com")).await.unwrap();
        // Process B takes the permission away.
        t.b.org(org.id.clone())
            .role(
                Acting::User(owner.id.clone()),
                RoleChange::Update {
                    role: "inviter".into(),
                    new_name: None,
                    permission: Some(perms(&[])),
                },
            )
            .await
            .unwrap();
        // A's next decision already sees it.
        let r = invite(format!("second{trial}@example.com")).await;
        assert!(
            matches!(r, Err(ActorError::Refused(Rule::Forbidden(..)))),
            "trial {trial}: {r:?}"
        );
    }
}

/// One user creating organizations from both processes at once never passes the per-user
/// limit (the count is decided on the user's version, which every new membership moves).
async fn organizations_created_from_two_processes_stop_at_the_user_limit(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    let limit = 2u32;
    for trial in 0..200 {
        let u = new_user(&t.store).await;
        let tasks = (0..4).map(|i| {
            let system = if i % 2 == 0 { &t.a } else { &t.b };
            let h = system.user(u.id.clone());
            let now = SystemClock.now();
            let org = Organization::new(
                "O".into(),
                format!("lim-{}", random_lower_alnum(12)),
                None,
                None,
                true,
                now,
            );
            let owner = Member {
                id: MemberId::generate(),
                organization_id: org.id.clone(),
                user_id: u.id.clone(),
                role: "owner".into(),
                team_id: None,
                created_at: now,
            };
            async move {
                h.create_organization(&org, &owner, Some(limit), false, None)
                    .await
            }
        });
        let results = join_all(tasks).await;
        assert!(results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(ActorError::Refused(Rule::OrganizationLimit)))));
        let orgs = t.store.list_user_organizations(&u.id).await.unwrap();
        assert_eq!(orgs.len() as u32, limit, "trial {trial}: {results:?}");
    }
}

/// Two accounts unlinked at once, one from each process: the user keeps one.
async fn unlinking_from_two_processes_keeps_the_last_account(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..200 {
        let u = new_user(&t.store).await;
        let now = SystemClock.now();
        for provider in ["github", "gitlab"] {
            let mut a = Account::credential(&u.id, String::new(), now);
            a.provider_id = provider.into();
            a.account_id = random_lower_alnum(12);
            a.password = None;
            t.store.create_account(&a, &[]).await.unwrap();
        }
        let (ha, hb) = (t.a.user(u.id.clone()), t.b.user(u.id.clone()));
        let (ra, rb) = tokio::join!(
            ha.unlink_account(Some("github"), None, false),
            hb.unlink_account(Some("gitlab"), None, false),
        );
        assert_eq!(
            t.store.list_accounts(&u.id).await.unwrap().len(),
            1,
            "trial {trial}: {ra:?} / {rb:?}"
        );
        let refused = if ra.is_err() { ra } else { rb };
        assert!(
            matches!(refused, Err(ActorError::Refused(Rule::LastAccount))),
            "trial {trial}: {refused:?}"
        );
    }
}

/// A custom role deleted in one process while the other assigns it: never a member holding a
/// role that no longer exists.
async fn a_role_is_never_deleted_while_another_process_assigns_it(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..200 {
        let owner = new_user(&t.store).await;
        let org = new_org(&t, &owner).await;
        let m = new_user(&t.store).await;
        let acting = Acting::User(owner.id.clone());
        t.a.org(org.id.clone())
            .role(
                acting.clone(),
                RoleChange::Create {
                    role: "temp".into(),
                    permission: Default::default(),
                },
            )
            .await
            .unwrap();
        let member =
            t.a.org(org.id.clone())
                .add_member(Acting::Server, m.id.clone(), "member")
                .await
                .unwrap();
        let (ha, hb) = (t.a.org(org.id.clone()), t.b.org(org.id.clone()));
        let (del, assign) = tokio::join!(
            ha.role(
                acting.clone(),
                RoleChange::Delete {
                    role: "temp".into()
                }
            ),
            hb.update_member_role(acting.clone(), member.id.clone(), "member,temp"),
        );
        let role_exists = t.store.get_role(&org.id, "temp").await.unwrap().is_some();
        let held = t
            .store
            .get_member(&org.id, &m.id)
            .await
            .unwrap()
            .unwrap()
            .role;
        if held.contains("temp") {
            assert!(role_exists, "trial {trial}: {del:?} / {assign:?}");
        }
        // Whichever went first, the other saw it: both cannot win.
        assert!(
            !(del.is_ok() && assign.is_ok()),
            "trial {trial}: {del:?} / {assign:?}"
        );
    }
}

/// The last two teams removed at once, one from each process: one team stays.
async fn removing_teams_from_two_processes_keeps_the_last_one(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..200 {
        let owner = new_user(&t.store).await;
        let org = new_org(&t, &owner).await;
        let acting = Acting::User(owner.id.clone());
        let mut teams = Vec::new();
        for name in ["one", "two"] {
            let team =
                t.a.org(org.id.clone())
                    .team(acting.clone(), TeamChange::Create { name: name.into() })
                    .await
                    .unwrap();
            teams.push(team.id);
        }
        let remove = |team: &TeamId| TeamChange::Remove {
            team: team.clone(),
            allow_removing_all: false,
        };
        let (ha, hb) = (t.a.org(org.id.clone()), t.b.org(org.id.clone()));
        let (ra, rb) = tokio::join!(
            ha.team(acting.clone(), remove(&teams[0])),
            hb.team(acting.clone(), remove(&teams[1])),
        );
        assert_eq!(
            t.store.list_teams(&org.id).await.unwrap().len(),
            1,
            "trial {trial}: {ra:?} / {rb:?}"
        );
    }
}

/// Profile changes made at once in both processes are both kept (no lost update).
async fn profile_changes_from_two_processes_are_both_kept(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..200 {
        let u = new_user(&t.store).await;
        let (ha, hb) = (t.a.user(u.id.clone()), t.b.user(u.id.clone()));
        let (ra, rb) = tokio::join!(
            ha.update_user(UserPatch {
                name: Some(format!("name{trial}")),
                ..UserPatch::default()
            }),
            hb.update_user(UserPatch {
                image: Some(Some(format!("https://img.example/{trial}"))),
                ..UserPatch::default()
            }),
        );
        ra.unwrap();
        rb.unwrap();
        let now = t.store.get_user(&u.id).await.unwrap().unwrap();
        assert_eq!(now.name, format!("name{trial}"), "trial {trial}");
        assert_eq!(
            now.image.as_deref(),
            Some(format!("https://img.example/{trial}").as_str()),
            "trial {trial}"
        );
    }
}

/// An organization's actor keeps the memberships it read while the organization's version
/// stays the same; a change made in the other process moves the version, so this process's
/// next decision acts on the change: a demoted admin is refused, a promoted member allowed,
/// a deleted user's membership gone — never the memberships as this process last read them.
async fn a_membership_changed_in_one_process_counts_in_the_others_next_decision(backend: Backend) {
    let Some(t) = two(backend, 100).await else {
        return;
    };
    for trial in 0..30 {
        let owner = new_user(&t.store).await;
        let org = new_org(&t, &owner).await;
        let (admin, member) = (new_user(&t.store).await, new_user(&t.store).await);
        let add = |u: &User, role: &'static str| {
            let h = t.b.org(org.id.clone());
            let id = u.id.clone();
            async move { h.add_member(Acting::Server, id, role).await.unwrap() }
        };
        let m_admin = add(&admin, "admin").await;
        let m_member = add(&member, "member").await;
        let in_a = t.a.org(org.id.clone());
        let in_b = t.b.org(org.id.clone());
        let as_admin = Acting::User(admin.id.clone());
        // A reads both memberships (and keeps them) deciding a change the admin may make.
        in_a.update_member_role(as_admin.clone(), m_member.id.clone(), "member")
            .await
            .unwrap();
        // B demotes the admin: A's next decision refuses the admin.
        in_b.update_member_role(Acting::User(owner.id.clone()), m_admin.id.clone(), "member")
            .await
            .unwrap();
        let r = in_a
            .update_member_role(as_admin.clone(), m_member.id.clone(), "admin")
            .await;
        assert!(
            matches!(r, Err(ActorError::Refused(Rule::Forbidden(..)))),
            "trial {trial}: a demoted admin changed a role: {r:?}"
        );
        // B promotes them again: A's next decision allows it.
        in_b.update_member_role(Acting::User(owner.id.clone()), m_admin.id.clone(), "admin")
            .await
            .unwrap();
        let m = in_a
            .update_member_role(as_admin.clone(), m_member.id.clone(), "admin")
            .await
            .unwrap_or_else(|e| panic!("trial {trial}: a promoted admin refused: {e:?}"));
        assert_eq!(m.role, "admin", "trial {trial}");
        // The member's user is deleted through B: A finds no membership to change.
        t.b.user(member.id.clone()).delete_user().await.unwrap();
        let r = in_a
            .update_member_role(
                Acting::User(owner.id.clone()),
                m_member.id.clone(),
                "member",
            )
            .await;
        assert!(
            matches!(r, Err(ActorError::Refused(Rule::MemberNotFound))),
            "trial {trial}: a deleted user's membership was changed: {r:?}"
        );
        let o = t.store.get_organization(&org.id).await.unwrap().unwrap();
        assert_eq!((o.member_count, o.owner_count), (2, 1), "trial {trial}");
    }
}

/// Counts every event a consumer is handed, by event id.
struct Counting(std::sync::Mutex<std::collections::HashMap<String, u32>>);

#[async_trait::async_trait]
impl actors::consumers::Consume for Counting {
    async fn handle(&self, events: &[Delivery]) -> usize {
        let mut seen = self.0.lock().unwrap();
        for d in events {
            *seen.entry(d.event.id.clone()).or_default() += 1;
        }
        events.len()
    }
}

/// The same consumer running in both processes (each with its own store connection) is
/// handed each event once in all, while events are written from both: the lease lets one
/// process read a shard at a time, and its recorded progress is where the other goes on.
async fn two_consumers_handle_each_event_once(backend: Backend) {
    use actors::consumers::{spawn, ConsumerSpec};
    use std::time::Duration;
    let Some(t) = two(backend, 100).await else {
        return;
    };
    let spec = ConsumerSpec {
        name: "counting".into(),
        topic: Topic::Domain,
        batch: 16,
        poll: Duration::from_millis(20),
        // Longer than any round takes on a loaded machine: a lease that runs out mid-round is
        // the case where a consumer may hand an event over again (at least once).
        lease: Duration::from_secs(5),
        shared: true,
    };
    let counted = Arc::new(Counting(Default::default()));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    // Each process's consumer runs on its own connection; both count into one table.
    let ca = spawn(
        t.a.store(),
        clock.clone(),
        "a".into(),
        spec.clone(),
        counted.clone(),
    );
    let cb = spawn(
        t.b.store(),
        clock.clone(),
        "b".into(),
        spec,
        counted.clone(),
    );
    let mut ids = Vec::new();
    for i in 0..120u32 {
        let store = if i % 2 == 0 { t.a.store() } else { t.b.store() };
        let e = Event::new(
            format!("org:{}", i % 7),
            SystemClock.now(),
            Payload::Domain {
                name: "team.created".into(),
                data: serde_json::json!({ "i": i }),
            },
        );
        ids.push(e.id.clone());
        store.append_events(&[e]).await.unwrap();
        if i % 40 == 0 {
            ca.wake();
            cb.wake();
        }
    }
    // A backend may hold recent events back for a few seconds (see `storage::scylla`).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        ca.wake();
        cb.wake();
        let done = counted.0.lock().unwrap().len() >= ids.len();
        if done || std::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ca.stop();
    cb.stop();
    let seen = counted.0.lock().unwrap();
    for id in &ids {
        assert_eq!(seen.get(id), Some(&1), "event {id}");
    }
    assert_eq!(seen.len(), ids.len());
}

/// A session is always read from the store, its user from the process's user cache: a change
/// of the user through this process shows at once, a change through the other process once
/// its event is read (the cache's lifetime is a minute here, so nothing else drops it), a
/// revoked session is gone at once everywhere, and a fresh read never uses the cache.
async fn a_user_changed_in_one_process_shows_in_the_others_sessions(backend: Backend) {
    use std::time::{Duration, Instant};
    let Some(t) = two_with(backend, |c| c.user_cache.ttl = Duration::from_secs(60)).await else {
        return;
    };
    let events = t.a.spawn_cache_invalidation(Duration::from_millis(50));
    let reader = t.a.reader();
    let u = new_user(&t.store).await;
    let now = SystemClock.now();
    let session = Session {
        id: SessionId::generate(),
        token: random_string(32),
        user_id: u.id.clone(),
        expires_at: now + chrono::Duration::days(1),
        ip_address: None,
        user_agent: None,
        created_at: now,
        updated_at: now,
        active_organization_id: None,
        active_team_id: None,
        impersonated_by: None,
    };
    t.store.create_session(&session, &[]).await.unwrap();
    let name = |fresh: bool| {
        let reader = reader.clone();
        let token = session.token.clone();
        async move {
            let (_, user) = reader
                .session_with_user(&token, fresh)
                .await
                .unwrap()
                .expect("the session");
            user.expect("the user").name
        }
    };
    assert_eq!(name(false).await, "U");
    // Written around both processes (no actor, no event): the cache answers, a fresh read not.
    let mut changed = t.store.get_user(&u.id).await.unwrap().unwrap();
    changed.name = "Behind".into();
    changed.version += 1;
    t.store.update_user(&changed, &[]).await.unwrap();
    assert_eq!(name(false).await, "U", "the user is cached");
    assert_eq!(name(true).await, "Behind");
    let rename = |process: &Actors, to: &str| {
        let user = process.user(u.id.clone());
        let patch = UserPatch {
            name: Some(to.into()),
            ..UserPatch::default()
        };
        async move { user.update_user(patch).await.unwrap() }
    };
    // Through this process's actor: at once.
    rename(&t.a, "Here").await;
    assert_eq!(name(false).await, "Here");
    // Through the other process: once its event is read (a CQL reader waits a few seconds).
    rename(&t.b, "There").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        events.wake();
        let seen = name(false).await;
        if seen == "There" {
            break;
        }
        assert_eq!(seen, "Here", "only the old or the new name");
        assert!(
            Instant::now() < deadline,
            "the other process's change never showed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Revoked by the other process: gone at once, the cached user notwithstanding.
    t.b.user(u.id.clone()).revoke_sessions(None).await.unwrap();
    assert!(reader
        .session_with_user(&session.token, false)
        .await
        .unwrap()
        .is_none());
    events.stop();
}
