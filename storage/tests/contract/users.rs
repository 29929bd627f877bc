//! Users and their accounts: round trips, unique emails, atomic creation, races, deletion, the admin's search.
use super::*;

pub async fn users_roundtrip_and_unique_email(s: S) {
    let u = user("Ann@Example.com");
    s.create_user(&u, Some(&credential(&u)), &[]).await.unwrap();
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
        s.create_user(&dup, None, &[]).await,
        Err(StoreError::Conflict(_))
    ));

    let mut changed = u.clone();
    changed.name = "Annie".into();
    changed.image = Some("https://img.example/a.png".into());
    changed.email_verified = true;
    changed.updated_at = now() + Duration::seconds(1);
    changed.version = 1;
    s.update_user(&changed, &[]).await.unwrap();
    assert_eq!(s.get_user(&u.id).await.unwrap().as_ref(), Some(&changed));
    // A change decided on the old version is refused, not written over the new one.
    let mut stale = u.clone();
    stale.name = "Stale".into();
    stale.version = 1;
    assert!(matches!(
        s.update_user(&stale, &[]).await,
        Err(StoreError::ConcurrentModification)
    ));
    assert_eq!(s.get_user(&u.id).await.unwrap().unwrap().name, "Annie");

    let other = user("bob@example.com");
    s.create_user(&other, None, &[]).await.unwrap();
    let mut steal = other.clone();
    steal.email = "ann@example.com".into();
    steal.version = 1;
    assert!(matches!(
        s.update_user(&steal, &[]).await,
        Err(StoreError::Conflict(_))
    ));
    let mut ghost = user("ghost@example.com");
    ghost.version = 1;
    assert!(matches!(
        s.update_user(&ghost, &[]).await,
        Err(StoreError::NotFound)
    ));
    // Several at once: those that exist, unknown ids skipped; more than one statement's worth.
    let unknown = UserId::generate();
    let mut many = vec![u.id.clone(), unknown.clone(), other.id.clone()];
    for i in 0..150 {
        let x = user(&format!("many{i}@example.com"));
        s.create_user(&x, None, &[]).await.unwrap();
        many.push(x.id);
    }
    let mut got: Vec<UserId> = s
        .get_users(&many)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    got.sort();
    let mut want: Vec<UserId> = many.into_iter().filter(|i| *i != unknown).collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(s.get_users(&[]).await.unwrap(), Vec::<User>::new());
    assert_eq!(
        s.get_users(std::slice::from_ref(&other.id)).await.unwrap(),
        vec![s.get_user(&other.id).await.unwrap().unwrap()]
    );
}

pub async fn create_user_is_atomic_with_its_account(s: S) {
    let a = user("a@example.com");
    let acc = credential(&a);
    s.create_user(&a, Some(&acc), &[]).await.unwrap();
    // A second user whose account collides with an existing one must not be created at all.
    let b = user("b@example.com");
    let mut clash = credential(&b);
    clash.account_id = acc.account_id.clone();
    assert!(matches!(
        s.create_user(&b, Some(&clash), &[]).await,
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
            s.create_user(&u, Some(&credential(&u)), &[]).await
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
    s.create_user(&u, Some(&cred), &[]).await.unwrap();
    let mut gh = credential(&u);
    gh.provider_id = "github".into();
    gh.account_id = "12345".into();
    gh.access_token = Some("gho_x".into());
    gh.scope = Some("read:user,user:email".into());
    s.create_account(&gh, &[]).await.unwrap();
    assert!(matches!(
        s.create_account(&gh, &[]).await,
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
    s.update_account(&changed, &[]).await.unwrap();
    assert_eq!(
        s.get_account_by_provider("github", "12345").await.unwrap(),
        Some(changed)
    );
    // Unlinking is decided on the user's version (linking moved it: 0 → 1).
    let v = s.get_user(&u.id).await.unwrap().unwrap().version;
    assert_eq!(v, 1);
    assert!(matches!(
        s.delete_account(&u.id, &gh.id, v - 1, &[]).await,
        Err(StoreError::ConcurrentModification)
    ));
    s.delete_account(&u.id, &gh.id, v, &[]).await.unwrap();
    assert!(s
        .get_account_by_provider("github", "12345")
        .await
        .unwrap()
        .is_none());
    assert!(matches!(
        s.delete_account(&u.id, &gh.id, v + 1, &[]).await,
        Err(StoreError::NotFound)
    ));
    // Another user's account is not found through this one.
    let other = user("other-acc@example.com");
    s.create_user(&other, Some(&credential(&other)), &[])
        .await
        .unwrap();
    let theirs = s.list_accounts(&other.id).await.unwrap()[0].id.clone();
    let v = s.get_user(&u.id).await.unwrap().unwrap().version;
    assert!(matches!(
        s.delete_account(&u.id, &theirs, v, &[]).await,
        Err(StoreError::NotFound)
    ));
    // Debug output never shows secrets.
    assert!(!format!("{cred:?}").contains("argon2"));
}

pub async fn deleting_a_user_removes_what_belongs_to_it(s: S) {
    let u = user("gone@example.com");
    s.create_user(&u, Some(&credential(&u)), &[]).await.unwrap();
    let x = session(&u);
    s.create_session(&x, &[]).await.unwrap();
    let o = org("gone-org");
    let owner = user("owner@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
        .await
        .unwrap();
    let m = member(&o, &u, "member");
    change(
        &s,
        &o.id,
        |n| n.member_count += 1,
        vec![OrgChange::AddMember(m.clone())],
    )
    .await
    .unwrap();
    let o = stored(&s, &o.id).await;
    let t = now();
    let pending = Verification {
        id: VerificationId::generate(),
        identifier: format!("reset-password:{}", random_string(24)),
        value: u.id.0.clone(),
        expires_at: t + Duration::hours(1),
        created_at: t,
        updated_at: t,
    };
    s.create_verification(&pending, &[]).await.unwrap();
    s.delete_user(&u.id, &[]).await.unwrap();
    assert!(s.get_user(&u.id).await.unwrap().is_none());
    assert!(s
        .get_verification(&pending.identifier)
        .await
        .unwrap()
        .is_none());
    assert!(s.get_session(&x.token).await.unwrap().is_none());
    assert!(s.list_accounts(&u.id).await.unwrap().is_empty());
    assert!(s.get_member_by_id(&o.id, &m.id).await.unwrap().is_none());
    assert_eq!(s.count_members(&o.id).await.unwrap(), 1);
    let after = s.get_organization(&o.id).await.unwrap().unwrap();
    assert_eq!(after.member_count, 1, "the organization's count follows");
    assert!(after.version > o.version, "and its version moves");
    // The email is free again.
    s.create_user(&user("gone@example.com"), None, &[])
        .await
        .unwrap();
    assert!(matches!(
        s.delete_user(&u.id, &[]).await,
        Err(StoreError::NotFound)
    ));
}

/// The admin's listing: search, filter, sort and window answer what a plain filter and sort
/// of every user (done here, independently) answers.
pub async fn list_users_search_filter_sort_page(s: S) {
    let names = [
        "Ann",
        "bob",
        "Carl",
        "dora",
        "Éva",
        "ann-marie",
        "Bo_b",
        "zed",
    ];
    let base = now() - Duration::hours(1);
    let mut users = Vec::new();
    for i in 0..48usize {
        let mut u = User::new(
            &format!(
                "u{i:02}{}@{}.io",
                if i % 5 == 0 { "_x" } else { "" },
                ["a", "b", "c"][i % 3]
            ),
            format!("{} {}", names[i % names.len()], 47 - i),
            None,
            base + Duration::seconds(i as i64),
        );
        u.role = match i % 4 {
            0 => Some("admin".into()),
            1 => Some("user".into()),
            2 => None,
            _ => Some("support,user".into()),
        };
        u.banned = i % 7 == 0;
        u.email_verified = i % 2 == 0;
        s.create_user(&u, None, &[]).await.unwrap();
        users.push(u);
    }
    let role = |u: &User| u.role.clone().unwrap_or_else(|| "user".into());
    let check = |q: UserQuery, want: Vec<&User>| {
        let s = s.clone();
        let want: Vec<String> = want.iter().map(|u| u.id.0.clone()).collect();
        async move {
            let got = s.list_users(&q).await.unwrap();
            let total = want.len() as u64;
            let window: Vec<String> = want
                .into_iter()
                .skip(q.offset as usize)
                .take(q.limit.map_or(usize::MAX, |l| l as usize))
                .collect();
            let ids: Vec<String> = got.users.iter().map(|u| u.id.0.clone()).collect();
            assert_eq!((ids, got.total), (window, total), "{q:?}");
        }
    };
    // No query: oldest first.
    check(UserQuery::default(), users.iter().collect()).await;
    // Search, each operator, ASCII case folded; `_` is a literal, not a wildcard.
    let q = |f, op, t: &str| UserQuery {
        search: Some((f, op, t.into())),
        ..Default::default()
    };
    let by = |p: &dyn Fn(&User) -> bool| users.iter().filter(|u| p(u)).collect::<Vec<_>>();
    check(
        q(UserField::Name, SearchOp::Contains, "ANN"),
        by(&|u| u.name.to_lowercase().contains("ann")),
    )
    .await;
    check(
        q(UserField::Name, SearchOp::StartsWith, "b"),
        by(&|u| u.name.to_lowercase().starts_with('b')),
    )
    .await;
    check(
        q(UserField::Email, SearchOp::EndsWith, "@b.io"),
        by(&|u| u.email.ends_with("@b.io")),
    )
    .await;
    check(
        q(UserField::Email, SearchOp::Contains, "_x"),
        by(&|u| u.email.contains("_x")),
    )
    .await;
    check(
        q(UserField::Name, SearchOp::Contains, "o_b"),
        by(&|u| u.name.contains("o_b")),
    )
    .await;
    check(q(UserField::Name, SearchOp::Contains, "%"), vec![]).await;
    // Filters.
    let f = |field, op, v: FieldValue| UserQuery {
        filter: Some((field, op, v)),
        ..Default::default()
    };
    check(
        f(
            UserField::Role,
            FilterOp::Eq,
            FieldValue::Text("user".into()),
        ),
        by(&|u| role(u) == "user"),
    )
    .await;
    check(
        f(
            UserField::Role,
            FilterOp::Ne,
            FieldValue::Text("admin".into()),
        ),
        by(&|u| role(u) != "admin"),
    )
    .await;
    check(
        f(
            UserField::Role,
            FilterOp::Contains,
            FieldValue::Text("support".into()),
        ),
        by(&|u| role(u).contains("support")),
    )
    .await;
    check(
        f(UserField::Banned, FilterOp::Eq, FieldValue::Flag(true)),
        by(&|u| u.banned),
    )
    .await;
    check(
        f(
            UserField::EmailVerified,
            FilterOp::Ne,
            FieldValue::Flag(true),
        ),
        by(&|u| !u.email_verified),
    )
    .await;
    let cut = users[20].created_at;
    check(
        f(
            UserField::CreatedAt,
            FilterOp::Gte,
            FieldValue::Millis(cut.timestamp_millis()),
        ),
        by(&|u| u.created_at >= cut),
    )
    .await;
    check(
        f(
            UserField::Email,
            FilterOp::Lt,
            FieldValue::Text("u10".into()),
        ),
        by(&|u| u.email.as_str() < "u10"),
    )
    .await;
    check(
        f(
            UserField::Banned,
            FilterOp::Eq,
            FieldValue::Text("yes".into()),
        ),
        vec![],
    )
    .await;
    // Sorts (byte order for text, ties by creation), with windows.
    let mut by_name: Vec<&User> = users.iter().collect();
    by_name.sort_by(|a, b| {
        a.name
            .as_bytes()
            .cmp(b.name.as_bytes())
            .then(a.created_at.cmp(&b.created_at))
    });
    for (limit, offset) in [
        (None, 0),
        (Some(10), 0),
        (Some(10), 15),
        (Some(7), 45),
        (Some(5), 60),
    ] {
        let q = UserQuery {
            sort: Some((UserField::Name, false)),
            limit,
            offset,
            ..Default::default()
        };
        check(q, by_name.clone()).await;
    }
    let mut by_email_desc: Vec<&User> = users.iter().collect();
    by_email_desc.sort_by(|a, b| b.email.cmp(&a.email));
    let q = UserQuery {
        sort: Some((UserField::Email, true)),
        limit: Some(9),
        offset: 3,
        ..Default::default()
    };
    check(q, by_email_desc).await;
    // All together.
    let mut want: Vec<&User> = users
        .iter()
        .filter(|u| u.email.ends_with("@a.io") && !u.banned)
        .collect();
    want.sort_by_key(|u| std::cmp::Reverse(u.created_at));
    let q = UserQuery {
        search: Some((UserField::Email, SearchOp::EndsWith, "@A.IO".into())),
        filter: Some((UserField::Banned, FilterOp::Eq, FieldValue::Flag(false))),
        sort: Some((UserField::CreatedAt, true)),
        limit: Some(4),
        offset: 2,
    };
    check(q, want).await;
}
