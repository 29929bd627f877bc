//! The storage contract: every backend runs these same cases (DESIGN §3). Each case takes a
//! fresh, empty store. Races use real concurrency: N tasks at once, exactly one may win.
#![allow(dead_code)]

use chrono::{Duration, Utc};
use futures::future::join_all;
use std::sync::Arc;
use storage::*;

pub type S = Arc<dyn Store>;

fn now() -> chrono::DateTime<Utc> {
    SystemClock.now()
}

pub fn user(email: &str) -> User {
    let t = now();
    User {
        id: UserId::generate(),
        email: email.to_lowercase(),
        email_verified: false,
        name: "Test".into(),
        image: None,
        role: None,
        banned: false,
        ban_reason: None,
        ban_expires: None,
        created_at: t,
        updated_at: t,
    }
}

pub fn credential(u: &User) -> Account {
    let t = now();
    Account {
        id: AccountId::generate(),
        user_id: u.id.clone(),
        provider_id: CREDENTIAL_PROVIDER.into(),
        account_id: u.id.0.clone(),
        password: Some("$argon2id$fake".into()),
        access_token: None,
        refresh_token: None,
        id_token: None,
        access_token_expires_at: None,
        refresh_token_expires_at: None,
        scope: None,
        created_at: t,
        updated_at: t,
    }
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
    Organization {
        id: OrgId::generate(),
        name: format!("Org {slug}"),
        slug: slug.into(),
        logo: None,
        metadata: Some("{\"plan\":\"pro\"}".into()),
        created_at: now(),
    }
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

pub async fn users_roundtrip_and_unique_email(s: S) {
    let u = user("Ann@Example.com");
    s.create_user(&u, Some(&credential(&u))).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap().as_ref(), Some(&u));
    assert_eq!(
        s.get_user_by_email("ANN@example.COM")
            .await
            .unwrap()
            .as_ref(),
        Some(&u)
    );
    assert!(s.get_user(&UserId::generate()).await.unwrap().is_none());

    let dup = user("ann@example.com");
    assert!(matches!(
        s.create_user(&dup, None).await,
        Err(StoreError::Conflict(_))
    ));

    let mut changed = u.clone();
    changed.name = "Annie".into();
    changed.image = Some("https://img.example/a.png".into());
    changed.email_verified = true;
    changed.updated_at = now() + Duration::seconds(1);
    s.update_user(&changed).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap().as_ref(), Some(&changed));

    let other = user("bob@example.com");
    s.create_user(&other, None).await.unwrap();
    let mut steal = other.clone();
    steal.email = "ann@example.com".into();
    assert!(matches!(
        s.update_user(&steal).await,
        Err(StoreError::Conflict(_))
    ));
    assert!(matches!(
        s.update_user(&user("ghost@example.com")).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn create_user_is_atomic_with_its_account(s: S) {
    let a = user("a@example.com");
    let acc = credential(&a);
    s.create_user(&a, Some(&acc)).await.unwrap();
    // A second user whose account collides with an existing one must not be created at all.
    let b = user("b@example.com");
    let mut clash = credential(&b);
    clash.account_id = acc.account_id.clone();
    assert!(matches!(
        s.create_user(&b, Some(&clash)).await,
        Err(StoreError::Conflict(_))
    ));
    assert!(s.get_user(&b.id).await.unwrap().is_none());
    assert!(s
        .get_user_by_email("b@example.com")
        .await
        .unwrap()
        .is_none());
}

pub async fn concurrent_sign_ups_of_one_email_one_wins(s: S) {
    let tasks = (0..20).map(|_| {
        let s = s.clone();
        tokio::spawn(async move {
            let u = user("race@example.com");
            s.create_user(&u, Some(&credential(&u))).await
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let wins = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "{results:?}");
    assert!(results
        .iter()
        .filter(|r| r.is_err())
        .all(|r| matches!(r, Err(StoreError::Conflict(_)))));
    let winner = s
        .get_user_by_email("race@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.list_accounts(&winner.id).await.unwrap().len(), 1);
}

pub async fn accounts(s: S) {
    let u = user("acc@example.com");
    let cred = credential(&u);
    s.create_user(&u, Some(&cred)).await.unwrap();
    let mut gh = credential(&u);
    gh.provider_id = "github".into();
    gh.account_id = "12345".into();
    gh.access_token = Some("gho_x".into());
    gh.scope = Some("read:user,user:email".into());
    s.create_account(&gh).await.unwrap();
    assert!(matches!(
        s.create_account(&gh).await,
        Err(StoreError::Conflict(_))
    ));
    let list = s.list_accounts(&u.id).await.unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        s.get_account_by_provider("github", "12345")
            .await
            .unwrap()
            .as_ref(),
        Some(&gh)
    );
    let mut changed = gh.clone();
    changed.access_token = Some("gho_y".into());
    changed.access_token_expires_at = Some(now() + Duration::hours(8));
    s.update_account(&changed).await.unwrap();
    assert_eq!(
        s.get_account_by_provider("github", "12345").await.unwrap(),
        Some(changed)
    );
    s.delete_account(&gh.id).await.unwrap();
    assert!(s
        .get_account_by_provider("github", "12345")
        .await
        .unwrap()
        .is_none());
    assert!(matches!(
        s.delete_account(&gh.id).await,
        Err(StoreError::NotFound)
    ));
    // Debug output never shows secrets.
    assert!(!format!("{cred:?}").contains("argon2"));
}

pub async fn sessions_lifecycle(s: S) {
    let u = user("sess@example.com");
    s.create_user(&u, None).await.unwrap();
    let a = session(&u);
    let b = session(&u);
    let c = session(&u);
    for x in [&a, &b, &c] {
        s.create_session(x).await.unwrap();
    }
    assert_eq!(s.get_session(&a.token).await.unwrap().as_ref(), Some(&a));
    assert_eq!(s.list_sessions(&u.id).await.unwrap().len(), 3);

    let mut moved = a.clone();
    moved.expires_at = a.expires_at + Duration::days(1);
    moved.updated_at = a.updated_at + Duration::days(1);
    moved.active_organization_id = Some(OrgId::generate());
    s.update_session(&moved).await.unwrap();
    assert_eq!(s.get_session(&a.token).await.unwrap(), Some(moved));

    assert_eq!(
        s.delete_user_sessions(&u.id, Some(&a.token)).await.unwrap(),
        2
    );
    let left = s.list_sessions(&u.id).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].token, a.token);
    assert!(s.delete_session(&a.token).await.unwrap());
    assert!(!s.delete_session(&a.token).await.unwrap());
    assert!(s.get_session(&a.token).await.unwrap().is_none());

    // A session of a user that no longer exists cannot be created.
    let ghost = user("ghost2@example.com");
    assert!(s.create_session(&session(&ghost)).await.is_err());
}

pub async fn deleted_session_is_never_written_back(s: S) {
    let u = user("revoke@example.com");
    s.create_user(&u, None).await.unwrap();
    for _ in 0..20 {
        let x = session(&u);
        s.create_session(&x).await.unwrap();
        let mut refreshed = x.clone();
        refreshed.expires_at = x.expires_at + Duration::days(1);
        let (s1, s2) = (s.clone(), s.clone());
        let (t, r) = (x.token.clone(), refreshed.clone());
        let del = tokio::spawn(async move { s1.delete_session(&t).await });
        let upd = tokio::spawn(async move { s2.update_session(&r).await });
        assert!(del.await.unwrap().unwrap());
        match upd.await.unwrap() {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
        assert!(
            s.get_session(&x.token).await.unwrap().is_none(),
            "revoked session came back"
        );
    }
    assert!(matches!(
        s.update_session(&session(&u)).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn purge_expired_sessions(s: S) {
    let u = user("old@example.com");
    s.create_user(&u, None).await.unwrap();
    let mut old = session(&u);
    old.expires_at = now() - Duration::seconds(1);
    let fresh = session(&u);
    s.create_session(&old).await.unwrap();
    s.create_session(&fresh).await.unwrap();
    assert_eq!(s.purge_expired_sessions(now()).await.unwrap(), 1);
    assert!(s.get_session(&old.token).await.unwrap().is_none());
    assert!(s.get_session(&fresh.token).await.unwrap().is_some());
}

pub async fn verifications_are_single_use(s: S) {
    let t = now();
    let v = Verification {
        id: VerificationId::generate(),
        identifier: format!("reset-password:{}", random_string(24)),
        value: "user-id".into(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    s.create_verification(&v).await.unwrap();
    assert!(matches!(
        s.create_verification(&v).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.get_verification(&v.identifier).await.unwrap().as_ref(),
        Some(&v)
    );
    let tasks = (0..20).map(|_| {
        let s = s.clone();
        let id = v.identifier.clone();
        tokio::spawn(async move { s.consume_verification(&id).await.unwrap() })
    });
    let got: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got.iter().filter(|g| g.is_some()).count(), 1);
    assert_eq!(got.into_iter().flatten().next(), Some(v.clone()));
    assert!(s.get_verification(&v.identifier).await.unwrap().is_none());

    let mut expired = v.clone();
    expired.identifier = "delete-account-x".into();
    expired.expires_at = t - Duration::seconds(1);
    s.create_verification(&expired).await.unwrap();
    assert_eq!(s.purge_expired_verifications(t).await.unwrap(), 1);
    assert!(!s.delete_verification("delete-account-x").await.unwrap());
}

pub async fn deleting_a_user_removes_what_belongs_to_it(s: S) {
    let u = user("gone@example.com");
    s.create_user(&u, Some(&credential(&u))).await.unwrap();
    let x = session(&u);
    s.create_session(&x).await.unwrap();
    let o = org("gone-org");
    let owner = user("owner@example.com");
    s.create_user(&owner, None).await.unwrap();
    s.create_organization(&o, &member(&o, &owner, "owner"))
        .await
        .unwrap();
    let m = member(&o, &u, "member");
    s.create_member(&m).await.unwrap();
    let t = now();
    let pending = Verification {
        id: VerificationId::generate(),
        identifier: format!("reset-password:{}", random_string(24)),
        value: u.id.0.clone(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    s.create_verification(&pending).await.unwrap();
    s.delete_user(&u.id).await.unwrap();
    assert!(s.get_user(&u.id).await.unwrap().is_none());
    assert!(s
        .get_verification(&pending.identifier)
        .await
        .unwrap()
        .is_none());
    assert!(s.get_session(&x.token).await.unwrap().is_none());
    assert!(s.list_accounts(&u.id).await.unwrap().is_empty());
    assert!(s.get_member_by_id(&m.id).await.unwrap().is_none());
    assert_eq!(s.count_members(&o.id).await.unwrap(), 1);
    // The email is free again.
    s.create_user(&user("gone@example.com"), None)
        .await
        .unwrap();
    assert!(matches!(
        s.delete_user(&u.id).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn organizations_and_members(s: S) {
    let owner = user("o@example.com");
    let bob = user("bob@example.com");
    s.create_user(&owner, None).await.unwrap();
    s.create_user(&bob, None).await.unwrap();
    let o = org("acme");
    let om = member(&o, &owner, "owner");
    s.create_organization(&o, &om).await.unwrap();
    assert_eq!(s.get_organization(&o.id).await.unwrap().as_ref(), Some(&o));
    assert_eq!(
        s.get_organization_by_slug("acme").await.unwrap().as_ref(),
        Some(&o)
    );
    assert!(matches!(
        s.create_organization(&org("acme"), &member(&o, &owner, "owner"))
            .await,
        Err(StoreError::Conflict(_))
    ));
    let bm = member(&o, &bob, "member");
    s.create_member(&bm).await.unwrap();
    assert!(matches!(
        s.create_member(&member(&o, &bob, "admin")).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(s.count_members(&o.id).await.unwrap(), 2);
    assert_eq!(s.list_members(&o.id, 1, 1).await.unwrap().len(), 1);
    assert_eq!(
        s.get_member(&o.id, &bob.id).await.unwrap().as_ref(),
        Some(&bm)
    );
    s.update_member_role(&bm.id, "admin,member").await.unwrap();
    assert_eq!(
        s.get_member_by_id(&bm.id).await.unwrap().unwrap().role,
        "admin,member"
    );
    assert_eq!(
        s.list_user_organizations(&bob.id).await.unwrap(),
        vec![o.clone()]
    );

    let mut renamed = o.clone();
    renamed.name = "Acme Inc".into();
    renamed.slug = "acme-inc".into();
    s.update_organization(&renamed).await.unwrap();
    assert!(s.get_organization_by_slug("acme").await.unwrap().is_none());
    let other = org("taken");
    s.create_organization(&other, &member(&other, &owner, "owner"))
        .await
        .unwrap();
    let mut clash = renamed.clone();
    clash.slug = "taken".into();
    assert!(matches!(
        s.update_organization(&clash).await,
        Err(StoreError::Conflict(_))
    ));

    let mut sess = session(&bob);
    sess.active_organization_id = Some(o.id.clone());
    s.create_session(&sess).await.unwrap();
    s.delete_member(&bm.id).await.unwrap();
    assert!(matches!(
        s.delete_member(&bm.id).await,
        Err(StoreError::NotFound)
    ));
    s.delete_organization(&o.id).await.unwrap();
    assert!(s.get_organization(&o.id).await.unwrap().is_none());
    assert!(s.get_member_by_id(&om.id).await.unwrap().is_none());
    assert_eq!(
        s.get_session(&sess.token)
            .await
            .unwrap()
            .unwrap()
            .active_organization_id,
        None
    );
}

pub async fn concurrent_creates_of_one_slug_one_wins(s: S) {
    let owner = user("slug@example.com");
    s.create_user(&owner, None).await.unwrap();
    let tasks = (0..10).map(|_| {
        let s = s.clone();
        let owner = owner.clone();
        tokio::spawn(async move {
            let o = org("same-slug");
            s.create_organization(&o, &member(&o, &owner, "owner"))
                .await
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    assert_eq!(s.list_user_organizations(&owner.id).await.unwrap().len(), 1);
}

pub async fn invitations_transition_once(s: S) {
    let owner = user("inv@example.com");
    s.create_user(&owner, None).await.unwrap();
    let o = org("inv-org");
    s.create_organization(&o, &member(&o, &owner, "owner"))
        .await
        .unwrap();
    let inv = Invitation {
        id: InvitationId::generate(),
        organization_id: o.id.clone(),
        email: "guest@example.com".into(),
        role: "member".into(),
        status: InvitationStatus::Pending,
        team_id: None,
        inviter_id: owner.id.clone(),
        expires_at: now() + Duration::days(2),
        created_at: now(),
    };
    s.create_invitation(&inv).await.unwrap();
    assert_eq!(
        s.get_invitation(&inv.id).await.unwrap().as_ref(),
        Some(&inv)
    );
    assert_eq!(s.list_invitations(&o.id).await.unwrap().len(), 1);
    assert_eq!(
        s.list_invitations_by_email("GUEST@example.com")
            .await
            .unwrap()
            .len(),
        1
    );
    let tasks = (0..20).map(|i| {
        let s = s.clone();
        let id = inv.id.clone();
        let to = if i % 2 == 0 {
            InvitationStatus::Accepted
        } else {
            InvitationStatus::Rejected
        };
        tokio::spawn(async move {
            s.transition_invitation(&id, InvitationStatus::Pending, to)
                .await
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    assert!(results
        .iter()
        .filter(|r| r.is_err())
        .all(|r| matches!(r, Err(StoreError::ConcurrentModification))));
    assert_ne!(
        s.get_invitation(&inv.id).await.unwrap().unwrap().status,
        InvitationStatus::Pending
    );
    assert!(matches!(
        s.transition_invitation(
            &InvitationId::generate(),
            InvitationStatus::Pending,
            InvitationStatus::Canceled
        )
        .await,
        Err(StoreError::NotFound)
    ));
}

pub async fn teams_and_roles(s: S) {
    let owner = user("team@example.com");
    s.create_user(&owner, None).await.unwrap();
    let o = org("team-org");
    let om = member(&o, &owner, "owner");
    s.create_organization(&o, &om).await.unwrap();
    let t = Team {
        id: TeamId::generate(),
        name: "Core".into(),
        organization_id: o.id.clone(),
        created_at: now(),
        updated_at: None,
    };
    s.create_team(&t).await.unwrap();
    let mut dup = t.clone();
    dup.id = TeamId::generate();
    assert!(matches!(
        s.create_team(&dup).await,
        Err(StoreError::Conflict(_))
    ));
    let tm = TeamMember {
        id: TeamMemberId::generate(),
        team_id: t.id.clone(),
        user_id: owner.id.clone(),
        created_at: now(),
    };
    s.add_team_member(&tm).await.unwrap();
    assert_eq!(s.list_team_members(&t.id).await.unwrap(), vec![tm.clone()]);
    assert_eq!(s.list_user_teams(&owner.id).await.unwrap(), vec![t.clone()]);
    let mut renamed = t.clone();
    renamed.name = "Platform".into();
    renamed.updated_at = Some(now());
    s.update_team(&renamed).await.unwrap();
    assert_eq!(s.get_team(&t.id).await.unwrap(), Some(renamed));
    assert_eq!(s.list_teams(&o.id).await.unwrap().len(), 1);
    assert!(s.remove_team_member(&t.id, &owner.id).await.unwrap());
    assert!(!s.remove_team_member(&t.id, &owner.id).await.unwrap());
    s.delete_team(&t.id).await.unwrap();
    assert!(s.get_team(&t.id).await.unwrap().is_none());

    let r = OrganizationRole {
        id: RoleId::generate(),
        organization_id: o.id.clone(),
        role: "billing".into(),
        permission: "{\"member\":[\"create\"]}".into(),
        created_at: now(),
        updated_at: None,
    };
    s.create_role(&r).await.unwrap();
    let mut dup = r.clone();
    dup.id = RoleId::generate();
    assert!(matches!(
        s.create_role(&dup).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.get_role(&o.id, "billing").await.unwrap().as_ref(),
        Some(&r)
    );
    let mut changed = r.clone();
    changed.permission = "{}".into();
    changed.updated_at = Some(now());
    s.update_role(&changed).await.unwrap();
    assert_eq!(s.list_roles(&o.id).await.unwrap(), vec![changed]);
    s.delete_role(&r.id).await.unwrap();
    assert!(s.get_role(&o.id, "billing").await.unwrap().is_none());
}

pub async fn key_pairs(s: S) {
    let k = KeyPair {
        id: KeyPairId::generate(),
        public_key: "pub".into(),
        private_key: "priv".into(),
        created_at: now(),
    };
    s.create_key_pair(&k).await.unwrap();
    assert_eq!(s.list_key_pairs().await.unwrap(), vec![k.clone()]);
    assert!(!format!("{k:?}").contains("priv"));
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
            sessions_lifecycle,
            deleted_session_is_never_written_back,
            purge_expired_sessions,
            verifications_are_single_use,
            deleting_a_user_removes_what_belongs_to_it,
            organizations_and_members,
            concurrent_creates_of_one_slug_one_wins,
            invitations_transition_once,
            teams_and_roles,
            key_pairs,
        );
    };
    (@cases $factory:path; $($case:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            let (store, _guard) = $factory().await;
            contract::$case(store).await;
        }
    )*};
}
