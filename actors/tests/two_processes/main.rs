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

mod consumers;
mod organizations;
mod users;
use consumers::*;
use organizations::*;
use users::*;
