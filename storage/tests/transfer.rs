//! Export and import: a store with every kind of record, exported, imported into an empty
//! SQLite file and into a keyspace of the CQL node (`SCYLLA_URI`), exported again — the same
//! records come out (versions aside: they count changes, and the import makes its own).
mod contract;

use chrono::Duration;
use std::sync::Arc;
use storage::scylla::testing::throwaway_keyspace;
use storage::scylla::ScyllaStore;
use storage::sqlite::SqliteStore;
use storage::transfer::{export, import, Record, TransferError};
use storage::*;

async fn sqlite(dir: &tempfile::TempDir, name: &str) -> DynStore {
    Arc::new(SqliteStore::open(dir.path().join(name)).await.unwrap())
}

/// A store with users (credential and social accounts, live and expired sessions), two
/// organizations (members, invitations in several states, teams with members, a custom role)
/// and a key pair.
async fn populated(s: &DynStore) {
    let now = SystemClock.now();
    let mut users = Vec::new();
    for i in 0..5 {
        let u = contract::user(&format!("user{i}@example.com"));
        s.create_user(&u, Some(&contract::credential(&u)), &[])
            .await
            .unwrap();
        let mut social = Account::credential(&u.id, String::new(), now);
        social.provider_id = "github".into();
        social.account_id = format!("gh-{i}");
        social.password = None;
        social.access_token = Some(format!("token-{i}"));
        s.create_account(&social, &[]).await.unwrap();
        s.create_session(&contract::session(&u), &[]).await.unwrap();
        let mut old = contract::session(&u);
        old.expires_at = now - Duration::hours(1);
        s.create_session(&old, &[]).await.unwrap();
        if i == 0 {
            // A second factor, on.
            let tf = TwoFactor {
                user_id: u.id.clone(),
                secret: "sealed".into(),
                backup_codes: vec!["h1".into(), "h2".into()],
                last_step: 7,
                created_at: now,
                updated_at: now,
                version: 3,
            };
            s.put_two_factor(&tf, None, &[]).await.unwrap();
            let mut on = s.get_user(&u.id).await.unwrap().unwrap();
            on.two_factor_enabled = true;
            on.version += 1;
            s.update_user(&on, &[]).await.unwrap();
            // And a passkey.
            let p = Passkey {
                id: PasskeyId::generate(),
                user_id: u.id.clone(),
                name: Some("Laptop".into()),
                credential_id: "cred-transfer".into(),
                public_key: "pQECAyYgASFY".into(),
                credential: "{}".into(),
                counter: 3,
                device_type: "multiDevice".into(),
                backed_up: true,
                transports: "internal".into(),
                aaguid: "00000000-0000-0000-0000-000000000000".into(),
                created_at: now,
                updated_at: now,
                last_used_at: Some(now),
                version: 2,
            };
            s.create_passkey(&p, &[]).await.unwrap();
        }
        users.push(s.get_user(&u.id).await.unwrap().unwrap());
    }
    for (n, slug) in ["acme", "globex"].iter().enumerate() {
        let o = Organization::new(
            slug.to_string(),
            slug.to_string(),
            Some("https://logo.example/x.png".into()),
            Some("{\"tier\":1}".into()),
            true,
            now,
        );
        let member = |u: &User, role: &str| Member {
            id: MemberId::generate(),
            organization_id: o.id.clone(),
            user_id: u.id.clone(),
            role: role.into(),
            team_id: None,
            created_at: now,
        };
        s.create_organization(&o, &member(&users[n], "owner"), None, &[])
            .await
            .unwrap();
        let team = Team {
            id: TeamId::generate(),
            name: "Platform".into(),
            organization_id: o.id.clone(),
            created_at: now,
            updated_at: None,
        };
        let role = OrganizationRole {
            id: RoleId::generate(),
            organization_id: o.id.clone(),
            role: "auditor".into(),
            permission: "{\"member\":[\"read\"]}".into(),
            created_at: now,
            updated_at: None,
        };
        let invitation = |email: &str, status| Invitation {
            id: InvitationId::generate(),
            organization_id: o.id.clone(),
            email: email.into(),
            role: "member".into(),
            status,
            team_id: Some(team.id.clone()),
            inviter_id: users[n].id.clone(),
            expires_at: now + Duration::days(2),
            created_at: now,
        };
        let mut next = s.get_organization(&o.id).await.unwrap().unwrap();
        next.version += 1;
        next.member_count += 2;
        next.owner_count += 1;
        next.roles_version += 1;
        s.change_organization(
            &next,
            &[
                OrgChange::CreateRole(role),
                OrgChange::CreateTeam(team.clone()),
                OrgChange::AddMember(member(&users[2], "admin,auditor")),
                OrgChange::AddMember(member(&users[3 + n], "owner")),
                OrgChange::Invite(invitation("new@example.com", InvitationStatus::Pending)),
                OrgChange::Invite(invitation("old@example.com", InvitationStatus::Accepted)),
                OrgChange::AddTeamMember(TeamMember {
                    id: TeamMemberId::generate(),
                    team_id: team.id.clone(),
                    user_id: users[2].id.clone(),
                    created_at: now,
                }),
            ],
            &[],
        )
        .await
        .unwrap();
        // An API key of the organization, made by its owner, and one of the owner's own.
        for (hash, owner) in [
            (format!("org-key-{slug}"), Some(o.id.clone())),
            (format!("own-key-{slug}"), None),
        ] {
            s.create_api_key(
                &ApiKey {
                    id: ApiKeyId::generate(),
                    config_id: "default".into(),
                    name: Some("ci".into()),
                    start: Some("abcdef".into()),
                    prefix: None,
                    key_hash: hash,
                    user_id: users[n].id.clone(),
                    organization_id: owner,
                    enabled: true,
                    expires_at: Some(now + Duration::days(30)),
                    created_at: now,
                    updated_at: now,
                    last_request: Some(now),
                    request_count: 2,
                    remaining: Some(8),
                    refill_amount: None,
                    refill_interval: None,
                    last_refill_at: None,
                    rate_limit_enabled: true,
                    rate_limit_time_window: Some(86_400_000),
                    rate_limit_max: Some(10),
                    permissions: Some("{\"member\":[\"create\"]}".into()),
                    metadata: None,
                    version: 3,
                },
                &[],
            )
            .await
            .unwrap();
        }
    }
    // A webhook endpoint of the first organization, and one of the server's own.
    let orgs = s.scan_organizations(None, 10).await.unwrap().items;
    for (id, scope) in [
        ("hook-org", format!("org:{}", orgs[0].id.0)),
        ("hook-server", GLOBAL_SCOPE.to_owned()),
    ] {
        let w = Webhook::new(
            id.into(),
            scope,
            "https://hooks.example.com/in".into(),
            vec!["*".into()],
            "gw1.sealed".into(),
            now,
        );
        s.create_webhook(&w, &[]).await.unwrap();
    }
    // A pending reset link and an expired one (left behind).
    for (identifier, expires_at) in [
        ("reset-password:pending-transfer", now + Duration::hours(1)),
        (
            "reset-password:expired-transfer",
            now - Duration::minutes(1),
        ),
    ] {
        s.create_verification(
            &Verification {
                id: VerificationId::generate(),
                identifier: identifier.into(),
                value: users[0].id.0.clone(),
                expires_at,
                created_at: now - Duration::hours(2),
                updated_at: now - Duration::hours(2),
            },
            &[],
        )
        .await
        .unwrap();
    }
    s.create_key_pair(&KeyPair {
        id: KeyPairId::generate(),
        public_key: "{\"kty\":\"OKP\"}".into(),
        private_key: "private".into(),
        created_at: now,
    })
    .await
    .unwrap();
}

/// The dump's records, versions cleared, each as a JSON line, sorted.
fn normalized(dump: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = std::str::from_utf8(dump)
        .unwrap()
        .lines()
        .map(|l| {
            let mut r: Record = serde_json::from_str(l).unwrap();
            match &mut r {
                Record::User { user, .. } => user.version = 0,
                Record::Organization { organization, .. } => organization.version = 0,
                _ => {}
            }
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    lines.sort();
    lines
}

async fn dump(s: &DynStore) -> Vec<u8> {
    let mut out = Vec::new();
    export(&**s, &mut out).await.unwrap();
    out
}

/// Imports the source's dump into `target` and checks that it exports the same records.
async fn round_trip(source: &DynStore, target: &DynStore) {
    let before = dump(source).await;
    let counts = import(&**target, before.as_slice()).await.unwrap();
    assert_eq!(
        (counts.users, counts.accounts, counts.sessions),
        (5, 10, 5),
        "expired sessions are left behind"
    );
    assert_eq!(
        (
            counts.organizations,
            counts.members,
            counts.key_pairs,
            counts.verifications
        ),
        (2, 6, 1, 1),
        "expired links are left behind"
    );
    let after = dump(target).await;
    assert_eq!(normalized(&before), normalized(&after));
    let with_factor = normalized(&after)
        .iter()
        .filter(|l| l.contains("\"two_factor\":{") && l.contains("\"two_factor_enabled\":true"))
        .count();
    assert_eq!(with_factor, 1, "the second factor moves with its user");
    let with_passkey = normalized(&after)
        .iter()
        .filter(|l| l.contains("\"credential_id\":\"cred-transfer\""))
        .count();
    assert_eq!(with_passkey, 1, "passkeys move with their user");
    for hash in [
        "org-key-acme",
        "own-key-acme",
        "org-key-globex",
        "own-key-globex",
    ] {
        let key = target.find_api_key(hash).await.unwrap();
        assert!(key.is_some_and(|k| k.remaining == Some(8)), "{hash} moved");
    }
    let pending = target
        .get_verification("reset-password:pending-transfer")
        .await
        .unwrap();
    assert!(pending.is_some(), "a pending reset link moves");
    for id in ["hook-org", "hook-server"] {
        let w = target.get_webhook(id).await.unwrap();
        assert!(w.is_some_and(|w| w.secret == "gw1.sealed"), "{id} moved");
    }
    // A second import into the now filled store is refused before it writes anything.
    assert!(matches!(
        import(&**target, before.as_slice()).await,
        Err(TransferError::NotEmpty(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_to_sqlite_and_to_the_cql_node() {
    let dir = tempfile::tempdir().unwrap();
    let source = sqlite(&dir, "source.db").await;
    populated(&source).await;
    round_trip(&source, &sqlite(&dir, "target.db").await).await;
    if let Some((opts, _drop)) = throwaway_keyspace("gh_transfer") {
        let target: DynStore = Arc::new(ScyllaStore::migrate(&opts).await.unwrap());
        round_trip(&source, &target).await;
        // And back: what the cluster holds exports into SQLite the same.
        round_trip(&target, &sqlite(&dir, "back.db").await).await;
    }
}

#[tokio::test]
async fn bad_dumps_name_their_line_and_write_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let target = sqlite(&dir, "t.db").await;
    let no_header = b"{\"type\":\"key_pair\",\"key_pair\":{}}\n";
    let err = import(&*target, &no_header[..]).await.unwrap_err();
    assert!(err.to_string().starts_with("line 1:"), "{err}");
    let future = b"{\"type\":\"header\",\"format\":\"gatehouse-export\",\"version\":99}\n";
    let err = import(&*target, &future[..]).await.unwrap_err();
    assert!(err.to_string().contains("version 99"), "{err}");
    let garbage =
        b"{\"type\":\"header\",\"format\":\"gatehouse-export\",\"version\":1}\n\nnot json\n";
    let err = import(&*target, &garbage[..]).await.unwrap_err();
    assert!(err.to_string().starts_with("line 3:"), "{err}");
    let err = import(&*target, &b""[..]).await.unwrap_err();
    assert!(err.to_string().contains("no header"), "{err}");
}
