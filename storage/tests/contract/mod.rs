//! The storage contract: every backend runs these same cases (DESIGN §3). Each case takes a
//! fresh, empty store. Races use real concurrency: N tasks at once, exactly one may win.
#![allow(dead_code)]

use chrono::{Duration, Utc};
use futures::future::join_all;
use std::sync::Arc;
use storage::*;

mod accounts;
mod api_keys;
mod events;
mod passkeys;
mod two_factor;
mod webhooks;
#[allow(unused_imports)]
pub use accounts::*;
#[allow(unused_imports)]
pub use api_keys::*;
#[allow(unused_imports)]
pub use events::*;
#[allow(unused_imports)]
pub use passkeys::*;
#[allow(unused_imports)]
pub use two_factor::*;
#[allow(unused_imports)]
pub use webhooks::*;
mod audit;
#[allow(unused_imports)]
pub use audit::*;
mod invitations_and_teams;
#[allow(unused_imports)]
pub use invitations_and_teams::*;
mod organizations;
#[allow(unused_imports)]
pub use organizations::*;
mod sessions;
#[allow(unused_imports)]
pub use sessions::*;
mod users;
#[allow(unused_imports)]
pub use users::*;

pub type S = Arc<dyn Store>;

fn now() -> chrono::DateTime<Utc> {
    SystemClock.now()
}

pub fn user(email: &str) -> User {
    let t = now();
    User::new(email, "Test".into(), None, t)
}

pub fn credential(u: &User) -> Account {
    Account::credential(&u.id, "$argon2id$fake".into(), now())
}

pub fn session(u: &User) -> Session {
    let t = now();
    Session {
        id: SessionId::generate(),
        token: random_string(32),
        user_id: u.id.clone(),
        expires_at: t + Duration::days(7),
        ip_address: Some("127.0.0.1".into()),
        user_agent: Some("test".into()),
        created_at: t,
        updated_at: t,
        active_organization_id: None,
        active_team_id: None,
        impersonated_by: None,
    }
}

fn org(slug: &str) -> Organization {
    Organization::new(
        format!("Org {slug}"),
        slug.into(),
        None,
        Some("{\"plan\":\"pro\"}".into()),
        true,
        now(),
    )
}

/// The organization as stored now.
async fn stored(s: &S, o: &OrgId) -> Organization {
    s.get_organization(o).await.unwrap().unwrap()
}

/// Applies `changes` on top of the stored row (counters adjusted by the caller's `edit`).
async fn change(
    s: &S,
    o: &OrgId,
    edit: impl FnOnce(&mut Organization),
    changes: Vec<OrgChange>,
) -> StoreResult<()> {
    let mut next = stored(s, o).await;
    next.version += 1;
    edit(&mut next);
    s.change_organization(&next, &changes, &[]).await
}

fn member(o: &Organization, u: &User, role: &str) -> Member {
    Member {
        id: MemberId::generate(),
        organization_id: o.id.clone(),
        user_id: u.id.clone(),
        role: role.into(),
        team_id: None,
        created_at: now(),
    }
}

/// Every case, for a backend's test file to call with a factory of fresh stores.
#[macro_export]
macro_rules! contract_tests {
    ($factory:path) => {
        contract_tests!(@cases $factory;
            users_roundtrip_and_unique_email,
            create_user_is_atomic_with_its_account,
            concurrent_sign_ups_of_one_email_one_wins,
            accounts,
            a_password_is_replaced_only_over_the_one_checked,
            sessions_lifecycle,
            many_session_reads_at_once_each_get_their_own,
            session_reads_given_up_midway_leave_none_waiting,
            deleted_session_is_never_written_back,
            purge_expired_sessions,
            verifications_are_single_use,
            verifications_of_one_owner_are_deleted_by_prefix,
            deleting_a_user_removes_what_belongs_to_it,
            organizations_and_members,
            members_page_by_cursor,
            scans_visit_everything_once,
            changes_of_one_unit_see_each_other,
            organization_changes_compare_and_set_their_version,
            concurrent_creates_of_one_slug_one_wins,
            invitations_transition_once,
            teams_and_roles,
            key_pairs,
            list_users_search_filter_sort_page,
            a_fresh_store_is_healthy,
            audit_log,
            audit_log_over_a_long_range,
            organization_view_is_its_single_reads,
            rate_limit_counters,
            events_are_stored_with_their_change_and_only_with_it,
            organization_decisions_carry_their_events,
            events_alone_and_mail,
            consumers_hold_leases_and_keep_their_progress,
            reading_in_pages_sees_each_event_once_in_order,
            two_factors_compare_and_set_and_go_with_their_user,
            concurrent_uses_of_one_two_factor_one_wins,
            two_factor_writes_carry_their_events,
            a_second_step_uses_the_code_takes_the_challenge_and_starts_the_session,
            concurrent_second_steps_of_one_challenge_one_wins,
            passkeys_register_once_change_and_go,
            concurrent_writes_of_one_passkey_one_wins,
            passkey_writes_carry_their_events,
            api_keys_are_found_by_hash_listed_by_owner_and_go,
            concurrent_uses_of_one_api_key_one_wins,
            api_key_writes_carry_their_events,
            webhooks_are_listed_by_scope_changed_by_version_and_go,
            deliveries_are_stored_once_leased_settled_and_listed,
            concurrent_claims_lease_each_delivery_once,
            deliveries_made_leased_are_their_makers,
            deliveries_stored_after_their_first_try,
        );
    };
    (@cases $factory:path; $($case:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            // A factory answers None when its backend is not configured here (it says so).
            let Some((store, _guard)) = $factory().await else {
                return;
            };
            contract::$case(store).await;
        }
    )*};
}
