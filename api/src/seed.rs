//! `gatehouse seed`: fills any store with users (each with the same password and some live
//! sessions) and organizations with members, through the storage traits — no SQL — many
//! writes at once, so scale runs (`bench/`) are reproducible on SQLite and ScyllaDB alike.
use chrono::{DateTime, Duration, Utc};
use futures::{StreamExt, TryStreamExt};
use storage::{
    Account, DynStore, Member, MemberId, OrgChange, Organization, Session, SessionId, StoreError,
    StoreResult, User, UserId,
};

/// What to make.
#[derive(Debug, Clone)]
pub struct Plan {
    pub users: u64,
    pub sessions_per_user: u32,
    pub organizations: u64,
    /// Members of each organization besides its owner (at most `users - 1`).
    pub members_per_organization: u32,
    /// Emails are `<prefix><n>@seed.example`, `n` from 0.
    pub prefix: String,
    /// How many writes are in flight at once.
    pub parallel: usize,
}

/// What was made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seeded {
    pub users: u64,
    pub sessions: u64,
    pub organizations: u64,
    pub members: u64,
}

impl std::fmt::Display for Seeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} users, {} sessions, {} organizations, {} members",
            self.users, self.sessions, self.organizations, self.members
        )
    }
}

/// The email of seeded user `n`.
pub fn email(prefix: &str, n: u64) -> String {
    format!("{prefix}{n}@seed.example")
}

fn user_id(prefix: &str, n: u64) -> UserId {
    // Derived, so organizations can name their members without reading users back.
    UserId(format!("seed{prefix}{n:0>12}"))
}

/// Writes `plan` into `store`; every user's password credential is `password_hash` (one
/// argon2 hash made by the caller: hashing per user would take hours for millions).
pub async fn seed(
    store: &DynStore,
    plan: &Plan,
    password_hash: &str,
    now: DateTime<Utc>,
) -> StoreResult<Seeded> {
    let parallel = plan.parallel.max(1);
    let sessions = futures::stream::iter(0..plan.users)
        .map(|n| async move {
            let mut user = User::new(&email(&plan.prefix, n), format!("Seed user {n}"), None, now);
            user.id = user_id(&plan.prefix, n);
            user.email_verified = true;
            let account = Account::credential(&user.id, password_hash.to_owned(), now);
            store
                .create_user(&user, Some(&account), &[])
                .await
                .map_err(|e| match e {
                    StoreError::Conflict(_) => StoreError::Internal(format!(
                        "{} exists already: seed with another --prefix",
                        user.email
                    )),
                    other => other,
                })?;
            for _ in 0..plan.sessions_per_user {
                store
                    .create_session(
                        &Session {
                            id: SessionId::generate(),
                            token: storage::random_string(32),
                            user_id: user.id.clone(),
                            expires_at: now + Duration::days(7),
                            ip_address: None,
                            user_agent: Some("gatehouse seed".into()),
                            created_at: now,
                            updated_at: now,
                            active_organization_id: None,
                            active_team_id: None,
                            impersonated_by: None,
                        },
                        &[],
                    )
                    .await?;
            }
            Ok::<u64, StoreError>(u64::from(plan.sessions_per_user))
        })
        .buffer_unordered(parallel)
        .try_fold(0u64, |acc, n| async move { Ok(acc + n) })
        .await?;
    let mut done = Seeded {
        users: plan.users,
        sessions,
        ..Seeded::default()
    };
    if plan.users == 0 {
        return Ok(done);
    }
    let per_org = u64::from(plan.members_per_organization).min(plan.users - 1);
    let members = futures::stream::iter(0..plan.organizations)
        .map(|j| async move {
            let owner_n = j % plan.users;
            let mut org = Organization::new(
                format!("Seed organization {j}"),
                format!("{}org-{j}", plan.prefix.to_lowercase()),
                None,
                None,
                true,
                now,
            );
            let member = |n: u64, role: &str| Member {
                id: MemberId::generate(),
                organization_id: org.id.clone(),
                user_id: user_id(&plan.prefix, n),
                role: role.into(),
                team_id: None,
                created_at: now,
            };
            store
                .create_organization(&org, &member(owner_n, storage::OWNER_ROLE), None, &[])
                .await?;
            if per_org > 0 {
                let changes: Vec<OrgChange> = (1..=per_org)
                    .map(|k| OrgChange::AddMember(member((owner_n + k) % plan.users, "member")))
                    .collect();
                org.version += 1;
                org.member_count += per_org as u32;
                store.change_organization(&org, &changes, &[]).await?;
            }
            Ok::<u64, StoreError>(per_org + 1)
        })
        .buffer_unordered(parallel)
        .try_fold(0u64, |acc, n| async move { Ok(acc + n) })
        .await?;
    done.organizations = plan.organizations;
    done.members = members;
    Ok(done)
}
