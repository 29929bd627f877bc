//! Moving everything from one store into another (`gatehouse export` / `gatehouse import`,
//! e.g. from the embedded SQLite file to a ScyllaDB cluster): JSON lines, a header line first,
//! then one line per user (with its accounts and live sessions), per organization (with its
//! members, invitations, teams, team members and roles) and per signing key pair.
//!
//! Then the pending single-use values (reset, verification, email-change and deletion links,
//! sign-in codes) that have not expired: a reset asked for before the move still works after it.
//!
//! The dump holds password hashes, OAuth tokens, session tokens, pending links and private keys:
//! treat it as the database itself.
use crate::*;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// The first line of a dump.
pub const FORMAT: &str = "gatehouse-export";
/// Bumped when the records change incompatibly.
pub const FORMAT_VERSION: u32 = 1;

/// Rows read per page while exporting.
const PAGE: u32 = 200;
/// Changes written per unit while importing an organization (a conditional batch each on
/// ScyllaDB, kept well under Cassandra's batch size limit).
const CHUNK: usize = 20;

/// One line of a dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Header {
        format: String,
        version: u32,
    },
    User {
        user: User,
        accounts: Vec<Account>,
        sessions: Vec<Session>,
        /// The user's second factor (its secret as sealed by the server that wrote it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        two_factor: Option<TwoFactor>,
        /// The user's passkeys.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        passkeys: Vec<Passkey>,
        /// The user's own API keys (hashes only, as stored).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        api_keys: Vec<ApiKey>,
    },
    Organization {
        organization: Organization,
        members: Vec<Member>,
        invitations: Vec<Invitation>,
        teams: Vec<Team>,
        team_members: Vec<TeamMember>,
        roles: Vec<OrganizationRole>,
        /// The organization's API keys (each made by a member; hashes only).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        api_keys: Vec<ApiKey>,
        /// The organization's webhook endpoints (secrets as sealed by the server that wrote
        /// them; their deliveries are history, not carried).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        webhooks: Vec<crate::Webhook>,
    },
    /// One of the server's own webhook endpoints.
    Webhook {
        webhook: crate::Webhook,
    },
    KeyPair {
        key_pair: KeyPair,
    },
    /// A pending single-use value (its identifier and value as stored).
    Verification {
        verification: Verification,
    },
}

/// How many of each a dump held.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub users: u64,
    pub accounts: u64,
    pub sessions: u64,
    pub organizations: u64,
    pub members: u64,
    pub key_pairs: u64,
    pub verifications: u64,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} users, {} accounts, {} sessions, {} organizations, {} members, {} key pairs, \
             {} pending links and codes",
            self.users,
            self.accounts,
            self.sessions,
            self.organizations,
            self.members,
            self.key_pairs,
            self.verifications
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("storage: {0}")]
    Store(#[from] StoreError),
    #[error("writing the dump: {0}")]
    Write(std::io::Error),
    #[error("line {line}: {message}")]
    Line { line: u64, message: String },
    #[error("the target store is not empty ({0}): import into an empty store")]
    NotEmpty(&'static str),
}

fn write_line(out: &mut impl Write, r: &Record) -> Result<(), TransferError> {
    let line = serde_json::to_string(r).map_err(|e| TransferError::Write(e.into()))?;
    writeln!(out, "{line}").map_err(TransferError::Write)
}

/// Writes every user, organization and key pair of `store` to `out`.
pub async fn export(store: &dyn Store, out: &mut impl Write) -> Result<Counts, TransferError> {
    let mut n = Counts::default();
    write_line(
        out,
        &Record::Header {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
        },
    )?;
    let now = chrono::Utc::now();
    let mut after = None::<String>;
    loop {
        let page = store.scan_users(after.as_deref(), PAGE).await?;
        for user in page.items {
            let accounts = store.list_accounts(&user.id).await?;
            let sessions: Vec<Session> = store
                .list_sessions(&user.id)
                .await?
                .into_iter()
                .filter(|s| s.expires_at > now)
                .collect();
            let two_factor = store.get_two_factor(&user.id).await?;
            let passkeys = store.list_passkeys(&user.id).await?;
            let api_keys = store.list_api_keys(&user.id.0).await?;
            n.users += 1;
            n.accounts += accounts.len() as u64;
            n.sessions += sessions.len() as u64;
            write_line(
                out,
                &Record::User {
                    user,
                    accounts,
                    sessions,
                    two_factor,
                    passkeys,
                    api_keys,
                },
            )?;
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let mut after = None::<String>;
    loop {
        let page = store.scan_organizations(after.as_deref(), PAGE).await?;
        for organization in page.items {
            let id = organization.id.clone();
            let teams = store.list_teams(&id).await?;
            let mut team_members = Vec::new();
            for t in &teams {
                team_members.extend(store.list_team_members(t).await?);
            }
            let members = store.list_all_members(&id).await?;
            n.organizations += 1;
            n.members += members.len() as u64;
            write_line(
                out,
                &Record::Organization {
                    organization,
                    members,
                    invitations: store.list_invitations(&id).await?,
                    teams,
                    team_members,
                    roles: store.list_roles(&id).await?,
                    api_keys: store.list_api_keys(&id.0).await?,
                    webhooks: store.list_webhooks(&format!("org:{}", id.0)).await?,
                },
            )?;
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    for webhook in store.list_webhooks(crate::GLOBAL_SCOPE).await? {
        write_line(out, &Record::Webhook { webhook })?;
    }
    for key_pair in store.list_key_pairs().await? {
        n.key_pairs += 1;
        write_line(out, &Record::KeyPair { key_pair })?;
    }
    let mut after = None::<String>;
    loop {
        let page = store.scan_verifications(after.as_deref(), PAGE).await?;
        for verification in page.items.into_iter().filter(|v| v.expires_at > now) {
            n.verifications += 1;
            write_line(out, &Record::Verification { verification })?;
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    out.flush().map_err(TransferError::Write)?;
    Ok(n)
}

/// Writes the records of a dump into `store`, which must be empty. Stops at the first line that
/// cannot be read or written, saying which.
pub async fn import(store: &dyn Store, input: impl BufRead) -> Result<Counts, TransferError> {
    if !store.scan_users(None, 1).await?.items.is_empty() {
        return Err(TransferError::NotEmpty("it has users"));
    }
    if !store.scan_organizations(None, 1).await?.items.is_empty() {
        return Err(TransferError::NotEmpty("it has organizations"));
    }
    let mut n = Counts::default();
    let mut header = false;
    for (i, line) in input.lines().enumerate() {
        let line_no = i as u64 + 1;
        let at = |message: String| TransferError::Line {
            line: line_no,
            message,
        };
        let line = line.map_err(|e| at(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = serde_json::from_str(&line).map_err(|e| at(e.to_string()))?;
        match record {
            Record::Header { format, version } => {
                if format != FORMAT || version != FORMAT_VERSION {
                    return Err(at(format!(
                        "a {format} dump, version {version}: this Gatehouse reads \
                         {FORMAT} version {FORMAT_VERSION}"
                    )));
                }
                header = true;
            }
            _ if !header => {
                return Err(at(format!("not a {FORMAT} dump (no header line)")));
            }
            Record::User {
                user,
                accounts,
                sessions,
                two_factor,
                passkeys,
                api_keys,
            } => {
                let mut accounts = accounts.into_iter();
                let first = accounts.next();
                store
                    .create_user(&user, first.as_ref(), &[])
                    .await
                    .map_err(|e| at(format!("user {}: {e}", user.id)))?;
                n.users += 1;
                n.accounts += u64::from(first.is_some());
                for a in accounts {
                    store
                        .create_account(&a, &[])
                        .await
                        .map_err(|e| at(format!("account {}: {e}", a.id)))?;
                    n.accounts += 1;
                }
                for s in sessions {
                    store
                        .create_session(&s, &[])
                        .await
                        .map_err(|e| at(format!("session {}: {e}", s.id)))?;
                    n.sessions += 1;
                }
                if let Some(tf) = two_factor {
                    store
                        .put_two_factor(&tf, None, &[])
                        .await
                        .map_err(|e| at(format!("two factor of {}: {e}", tf.user_id)))?;
                }
                for p in passkeys {
                    store
                        .create_passkey(&p, &[])
                        .await
                        .map_err(|e| at(format!("passkey {}: {e}", p.id)))?;
                }
                import_api_keys(store, api_keys)
                    .await
                    .map_err(|e| at(format!("API key: {e}")))?;
            }
            Record::Organization {
                organization,
                members,
                invitations,
                teams,
                team_members,
                roles,
                api_keys,
                webhooks,
            } => {
                n.members += members.len() as u64;
                let id = organization.id.clone();
                import_organization(
                    store,
                    organization,
                    members,
                    invitations,
                    teams,
                    team_members,
                    roles,
                )
                .await
                .map_err(|e| at(format!("organization {id}: {e}")))?;
                import_api_keys(store, api_keys)
                    .await
                    .map_err(|e| at(format!("API key of organization {id}: {e}")))?;
                for w in webhooks {
                    store
                        .create_webhook(&w, &[])
                        .await
                        .map_err(|e| at(format!("webhook {} of organization {id}: {e}", w.id)))?;
                }
                n.organizations += 1;
            }
            Record::Webhook { webhook } => {
                store
                    .create_webhook(&webhook, &[])
                    .await
                    .map_err(|e| at(format!("webhook {}: {e}", webhook.id)))?;
            }
            Record::KeyPair { key_pair } => {
                store
                    .create_key_pair(&key_pair)
                    .await
                    .map_err(|e| at(format!("key pair {}: {e}", key_pair.id.0)))?;
                n.key_pairs += 1;
            }
            Record::Verification { verification } => {
                store
                    .create_verification(&verification, &[])
                    .await
                    .map_err(|e| at(format!("pending link or code {}: {e}", verification.id)))?;
                n.verifications += 1;
            }
        }
    }
    if !header {
        return Err(TransferError::Line {
            line: 0,
            message: "empty input: no header line".into(),
        });
    }
    Ok(n)
}

async fn import_api_keys(store: &dyn Store, keys: Vec<ApiKey>) -> StoreResult<()> {
    for k in keys {
        store.create_api_key(&k, &[]).await?;
    }
    Ok(())
}

fn holds_owner(role: &str) -> bool {
    role.split(',').any(|r| r.trim() == OWNER_ROLE)
}

/// Creates the organization with its first member, then writes the rest as changes, a chunk
/// at a time: roles and teams before the members and invitations that name them.
async fn import_organization(
    store: &dyn Store,
    org: Organization,
    members: Vec<Member>,
    invitations: Vec<Invitation>,
    teams: Vec<Team>,
    team_members: Vec<TeamMember>,
    roles: Vec<OrganizationRole>,
) -> StoreResult<()> {
    let mut members = members.into_iter();
    let first = members
        .next()
        .ok_or_else(|| StoreError::Internal(format!("organization {} has no member", org.id)))?;
    let mut current = Organization {
        version: 0,
        member_count: 1,
        owner_count: u32::from(holds_owner(&first.role)),
        roles_version: 0,
        ..org.clone()
    };
    store
        .create_organization(&current, &first, None, &[])
        .await?;
    let changes: Vec<OrgChange> = roles
        .into_iter()
        .map(OrgChange::CreateRole)
        .chain(teams.into_iter().map(OrgChange::CreateTeam))
        .chain(members.map(OrgChange::AddMember))
        .chain(invitations.into_iter().map(OrgChange::Invite))
        .chain(team_members.into_iter().map(OrgChange::AddTeamMember))
        .collect();
    for chunk in changes.chunks(CHUNK) {
        let mut next = current.clone();
        next.version += 1;
        for c in chunk {
            if let OrgChange::AddMember(m) = c {
                next.member_count += 1;
                next.owner_count += u32::from(holds_owner(&m.role));
            }
        }
        store.change_organization(&next, chunk, &[]).await?;
        current = next;
    }
    // The exported roles version, so cached policies elsewhere never mistake it for an old one.
    if current.roles_version != org.roles_version {
        let mut next = current.clone();
        next.version += 1;
        next.roles_version = org.roles_version;
        store.change_organization(&next, &[], &[]).await?;
    }
    Ok(())
}
