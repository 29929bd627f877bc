//! Organizations and members: versioned changes, races, scans, the organization view.
use super::*;

pub async fn organizations_and_members(s: S) {
    let owner = user("o@example.com");
    let bob = user("bob@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    s.create_user(&bob, None, &[]).await.unwrap();
    let o = org("acme");
    let om = member(&o, &owner, "owner");
    s.create_organization(&o, &om, None, &[]).await.unwrap();
    assert_eq!(s.get_organization(&o.id).await.unwrap().as_ref(), Some(&o));
    assert_eq!((o.version, o.member_count, o.owner_count), (0, 1, 1));
    assert_eq!(
        s.get_organization_by_slug("acme").await.unwrap().as_ref(),
        Some(&o)
    );
    assert!(matches!(
        s.create_organization(&org("acme"), &member(&o, &owner, "owner"), None, &[])
            .await,
        Err(StoreError::Conflict(_))
    ));
    // Joined after the owner (in the same millisecond, the random ids would decide the order).
    let bm = Member {
        created_at: om.created_at + Duration::milliseconds(1),
        ..member(&o, &bob, "member")
    };
    let add = |m: &Member| vec![OrgChange::AddMember(m.clone())];
    change(&s, &o.id, |n| n.member_count += 1, add(&bm))
        .await
        .unwrap();
    assert!(matches!(
        change(&s, &o.id, |_| {}, add(&member(&o, &bob, "admin"))).await,
        Err(StoreError::Conflict(_))
    ));
    let now_o = stored(&s, &o.id).await;
    assert_eq!(
        (now_o.version, now_o.member_count),
        (1, 2),
        "a refused change writes nothing"
    );
    assert_eq!(s.count_members(&o.id).await.unwrap(), 2);
    assert_eq!(s.count_user_organizations(&bob.id).await.unwrap(), 1);
    assert_eq!(
        s.list_members_window(&o.id, 1, 1).await.unwrap(),
        vec![bm.clone()]
    );
    assert_eq!(
        s.get_member(&o.id, &bob.id).await.unwrap().as_ref(),
        Some(&bm)
    );
    let set_role = OrgChange::SetMemberRole {
        member: bm.id.clone(),
        role: "admin,member".into(),
    };
    change(&s, &o.id, |_| {}, vec![set_role]).await.unwrap();
    assert_eq!(
        s.get_member_by_id(&o.id, &bm.id)
            .await
            .unwrap()
            .unwrap()
            .role,
        "admin,member"
    );
    assert_eq!(
        s.list_user_organizations(&bob.id).await.unwrap(),
        vec![stored(&s, &o.id).await]
    );

    change(
        &s,
        &o.id,
        |n| {
            n.name = "Acme Inc".into();
            n.slug = "acme-inc".into();
        },
        vec![],
    )
    .await
    .unwrap();
    assert!(s.get_organization_by_slug("acme").await.unwrap().is_none());
    let other = org("taken");
    s.create_organization(&other, &member(&other, &owner, "owner"), None, &[])
        .await
        .unwrap();
    assert!(matches!(
        change(&s, &o.id, |n| n.slug = "taken".into(), vec![]).await,
        Err(StoreError::Conflict(_))
    ));
    // A member of another organization is not found through this one.
    let other_owner = s.list_all_members(&other.id).await.unwrap()[0].id.clone();
    assert!(matches!(
        change(
            &s,
            &o.id,
            |_| {},
            vec![OrgChange::RemoveMember(other_owner)]
        )
        .await,
        Err(StoreError::NotFound)
    ));

    // Sessions that had the organization active lose it when their user leaves it…
    let mut bob_sess = session(&bob);
    bob_sess.active_organization_id = Some(o.id.clone());
    s.create_session(&bob_sess, &[]).await.unwrap();
    let mut sess = session(&owner);
    sess.active_organization_id = Some(o.id.clone());
    s.create_session(&sess, &[]).await.unwrap();
    let remove = vec![OrgChange::RemoveMember(bm.id.clone())];
    change(&s, &o.id, |n| n.member_count -= 1, remove.clone())
        .await
        .unwrap();
    let active = |t: String| {
        let s = s.clone();
        async move {
            s.get_session(&t)
                .await
                .unwrap()
                .unwrap()
                .active_organization_id
        }
    };
    assert_eq!(active(bob_sess.token.clone()).await, None);
    assert_eq!(s.count_user_organizations(&bob.id).await.unwrap(), 0);
    assert_eq!(s.list_user_organizations(&bob.id).await.unwrap(), vec![]);
    assert_eq!(active(sess.token.clone()).await, Some(o.id.clone()));
    assert!(matches!(
        change(&s, &o.id, |_| {}, remove).await,
        Err(StoreError::NotFound)
    ));
    let at = stored(&s, &o.id).await.version;
    assert!(matches!(
        s.delete_organization(&o.id, at - 1, &[]).await,
        Err(StoreError::ConcurrentModification)
    ));
    s.delete_organization(&o.id, at, &[]).await.unwrap();
    assert!(s.get_organization(&o.id).await.unwrap().is_none());
    assert!(s.get_member_by_id(&o.id, &om.id).await.unwrap().is_none());
    assert!(matches!(
        s.delete_organization(&o.id, at, &[]).await,
        Err(StoreError::NotFound)
    ));
    // …and when it is deleted.
    assert_eq!(active(sess.token.clone()).await, None);
}

/// Members page by cursor, oldest first (creation time, then id), and a member added while
/// paging neither repeats nor hides one that was there; limit/offset windows come from pages.
pub async fn members_page_by_cursor(s: S) {
    let owner = user("pages@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("pages");
    let first = member(&o, &owner, "owner");
    s.create_organization(&o, &first, None, &[]).await.unwrap();
    let t0 = first.created_at;
    let mut expected = vec![first];
    for i in 0..11 {
        let u = user(&format!("p{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        let mut m = member(&o, &u, "member");
        // Two pairs share a creation time: the id orders them.
        m.created_at = t0 + Duration::milliseconds(1 + i / 2 * 2);
        change(
            &s,
            &o.id,
            |n| n.member_count += 1,
            vec![OrgChange::AddMember(m.clone())],
        )
        .await
        .unwrap();
        expected.push(m);
    }
    expected.sort_by(|a, b| {
        (a.created_at.timestamp_millis(), &a.id.0).cmp(&(b.created_at.timestamp_millis(), &b.id.0))
    });
    assert_eq!(s.list_all_members(&o.id).await.unwrap(), expected);
    assert_eq!(s.count_members(&o.id).await.unwrap(), 12);

    let p1 = s.list_members(&o.id, None, 5).await.unwrap();
    assert_eq!(p1.items, expected[..5]);
    let c1 = p1.next.expect("more pages");
    // Someone joins while the pages are read: they come last, nothing repeats or goes missing.
    let late = user("late@example.com");
    s.create_user(&late, None, &[]).await.unwrap();
    let mut lm = member(&o, &late, "member");
    lm.created_at = t0 + Duration::seconds(1);
    change(
        &s,
        &o.id,
        |n| n.member_count += 1,
        vec![OrgChange::AddMember(lm.clone())],
    )
    .await
    .unwrap();
    let p2 = s.list_members(&o.id, Some(&c1), 5).await.unwrap();
    assert_eq!(p2.items, expected[5..10]);
    let p3 = s.list_members(&o.id, p2.next.as_deref(), 5).await.unwrap();
    assert_eq!(p3.items[..2], expected[10..]);
    assert_eq!(p3.items[2], lm);
    assert_eq!(p3.next, None, "the last page says so");
    // Exactly one page's worth: no next page announced.
    assert_eq!(s.list_members(&o.id, None, 13).await.unwrap().next, None);
    assert_eq!(
        s.list_members_window(&o.id, 3, 4).await.unwrap(),
        expected[3..7]
    );
    assert_eq!(s.list_members_window(&o.id, 20, 4).await.unwrap(), vec![]);
    assert_eq!(s.list_members_window(&o.id, 12, 4).await.unwrap(), vec![lm]);
}

/// The changes of one unit apply in order: later ones see what earlier ones made.
pub async fn changes_of_one_unit_see_each_other(s: S) {
    let owner = user("unit@example.com");
    let joiner = user("joiner@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    s.create_user(&joiner, None, &[]).await.unwrap();
    let o = org("unit");
    s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
        .await
        .unwrap();
    let team = Team {
        id: TeamId::generate(),
        name: "Core".into(),
        organization_id: o.id.clone(),
        created_at: now(),
        updated_at: None,
    };
    let jm = member(&o, &joiner, "member");
    let inv = Invitation {
        id: InvitationId::generate(),
        organization_id: o.id.clone(),
        email: joiner.email.clone(),
        role: "member".into(),
        status: InvitationStatus::Pending,
        team_id: Some(team.id.clone()),
        inviter_id: owner.id.clone(),
        expires_at: now() + Duration::days(1),
        created_at: now(),
    };
    let tm = TeamMember {
        id: TeamMemberId::generate(),
        team_id: team.id.clone(),
        user_id: joiner.id.clone(),
        created_at: now(),
    };
    change(
        &s,
        &o.id,
        |n| n.member_count += 1,
        vec![
            OrgChange::CreateTeam(team.clone()),
            OrgChange::Invite(inv.clone()),
            OrgChange::TransitionInvitation {
                id: inv.id.clone(),
                from: InvitationStatus::Pending,
                to: InvitationStatus::Accepted,
            },
            OrgChange::AddMember(jm.clone()),
            OrgChange::AddTeamMember(tm.clone()),
            OrgChange::SetMemberRole {
                member: jm.id.clone(),
                role: "admin".into(),
            },
        ],
    )
    .await
    .unwrap();
    assert_eq!(s.list_team_members(&team).await.unwrap(), vec![tm]);
    assert_eq!(
        s.get_invitation(&inv.id).await.unwrap().unwrap().status,
        InvitationStatus::Accepted
    );
    assert_eq!(
        s.get_member(&o.id, &joiner.id).await.unwrap().unwrap().role,
        "admin"
    );
    // A later change that cannot apply undoes the whole unit.
    let other = Team {
        id: TeamId::generate(),
        name: "Other".into(),
        ..team.clone()
    };
    assert!(matches!(
        change(
            &s,
            &o.id,
            |_| {},
            vec![
                OrgChange::CreateTeam(other.clone()),
                OrgChange::AddMember(member(&o, &joiner, "member")),
            ],
        )
        .await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(s.get_team(&other.id).await.unwrap(), None);
}

/// Scans page through every user and organization exactly once; a deleted organization is not
/// among them.
pub async fn scans_visit_everything_once(s: S) {
    let mut users = Vec::new();
    for i in 0..7 {
        let u = user(&format!("scan{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        users.push(u.id.0.clone());
    }
    let mut orgs = Vec::new();
    for (i, owner) in users.iter().take(5).enumerate() {
        let o = org(&format!("scan-{i}"));
        s.create_organization(
            &o,
            &member(&o, &user_of(&s, owner).await, "owner"),
            None,
            &[],
        )
        .await
        .unwrap();
        orgs.push(o);
    }
    s.delete_organization(&orgs[4].id, 0, &[]).await.unwrap();
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = s.scan_users(after.as_deref(), 3).await.unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(page.items.into_iter().map(|u| u.id.0));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    seen.sort();
    users.sort();
    assert_eq!(seen, users);
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = s.scan_organizations(after.as_deref(), 2).await.unwrap();
        seen.extend(page.items.into_iter().map(|o| o.id.0));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    seen.sort();
    let mut live: Vec<String> = orgs[..4].iter().map(|o| o.id.0.clone()).collect();
    live.sort();
    assert_eq!(seen, live);
    // The single-use values, page by page (export carries the pending ones).
    let mut made = Vec::new();
    for i in 0..7 {
        let t = now();
        let v = Verification {
            id: VerificationId::generate(),
            identifier: format!("scan-{i}:{}", random_string(8)),
            value: users[i % users.len()].clone(),
            expires_at: t + Duration::minutes(10),
            created_at: t,
            updated_at: t,
        };
        s.create_verification(&v, &[]).await.unwrap();
        made.push(v.identifier);
    }
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = s.scan_verifications(after.as_deref(), 3).await.unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(page.items.into_iter().map(|v| v.identifier));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    seen.sort();
    made.sort();
    assert_eq!(seen, made);
}

async fn user_of(s: &S, id: &str) -> User {
    s.get_user(&UserId(id.into())).await.unwrap().unwrap()
}

/// A change decided on an older version is refused, whoever made the newer one: of N
/// concurrent changes decided on one version exactly one is written.
pub async fn organization_changes_compare_and_set_their_version(s: S) {
    let owner = user("cas@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("cas-org");
    s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
        .await
        .unwrap();
    let mut users = Vec::new();
    for i in 0..20 {
        let u = user(&format!("cas{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        users.push(u);
    }
    // All decide on version 0 ("one seat left", say): one wins, the rest must reload.
    let tasks = users.iter().map(|u| {
        let s = s.clone();
        let mut next = o.clone();
        next.version = 1;
        next.member_count = 2;
        let m = member(&o, u, "member");
        tokio::spawn(async move {
            s.change_organization(&next, &[OrgChange::AddMember(m)], &[])
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
    assert_eq!(s.count_members(&o.id).await.unwrap(), 2);
    let now_o = stored(&s, &o.id).await;
    assert_eq!((now_o.version, now_o.member_count), (1, 2));
    // Unknown organization.
    let mut ghost = org("ghost");
    ghost.version = 1;
    assert!(matches!(
        s.change_organization(&ghost, &[], &[]).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn concurrent_creates_of_one_slug_one_wins(s: S) {
    let owner = user("slug@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let tasks = (0..10).map(|_| {
        let s = s.clone();
        let owner = owner.clone();
        tokio::spawn(async move {
            let o = org("same-slug");
            s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
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

/// A range longer than one read walks (a partitioned backend reads it in pieces, some pages
/// empty but with a cursor): every event comes once, in order, whichever the direction.
/// An organization's view in one read: the same as its single reads, whichever the backend.
pub async fn organization_view_is_its_single_reads(s: S) {
    let owner = user("view-owner@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("view");
    let om = member(&o, &owner, "owner");
    s.create_organization(&o, &om, None, &[]).await.unwrap();
    let (mut users, mut members) = (Vec::new(), Vec::new());
    for i in 0..5 {
        let u = user(&format!("view-{i}@example.com"));
        s.create_user(&u, None, &[]).await.unwrap();
        members.push(Member {
            created_at: om.created_at + Duration::milliseconds(i + 1),
            ..member(&o, &u, "member")
        });
        users.push(u);
    }
    let teams: Vec<Team> = (0..2)
        .map(|i| Team {
            id: TeamId::generate(),
            name: format!("T{i}"),
            organization_id: o.id.clone(),
            created_at: now() + Duration::milliseconds(i),
            updated_at: None,
        })
        .collect();
    let inv = Invitation {
        id: InvitationId::generate(),
        organization_id: o.id.clone(),
        email: "invited@example.com".into(),
        role: "member".into(),
        status: InvitationStatus::Pending,
        team_id: None,
        inviter_id: owner.id.clone(),
        expires_at: now() + Duration::days(1),
        created_at: now(),
    };
    let mut changes: Vec<OrgChange> = members.iter().cloned().map(OrgChange::AddMember).collect();
    changes.extend(teams.iter().cloned().map(OrgChange::CreateTeam));
    changes.push(OrgChange::Invite(inv.clone()));
    for u in &users[..3] {
        changes.push(OrgChange::AddTeamMember(TeamMember {
            id: TeamMemberId::generate(),
            team_id: teams[0].id.clone(),
            user_id: u.id.clone(),
            created_at: now(),
        }));
    }
    change(&s, &o.id, |n| n.member_count += 5, changes)
        .await
        .unwrap();
    let q = ViewQuery {
        viewer: users[1].id.clone(),
        offset: 1,
        limit: 3,
        details: true,
    };
    let view = s
        .organization_view(&o.id, &q)
        .await
        .unwrap()
        .expect("the organization");
    assert_eq!(
        view,
        compose_organization_view(&*s, &o.id, &q)
            .await
            .unwrap()
            .unwrap()
    );
    assert_eq!(view.organization, stored(&s, &o.id).await);
    assert_eq!(view.viewer.as_ref().map(|m| &m.id), Some(&members[1].id));
    let window: Vec<(&MemberId, Option<&UserId>)> = view
        .members
        .iter()
        .map(|(m, u)| (&m.id, u.as_ref().map(|u| &u.id)))
        .collect();
    assert_eq!(
        window,
        [
            (&members[0].id, Some(&users[0].id)),
            (&members[1].id, Some(&users[1].id)),
            (&members[2].id, Some(&users[2].id)),
        ]
    );
    assert_eq!(view.total_members, 6);
    assert_eq!(view.invitations, vec![inv]);
    let counts: Vec<(&str, u32)> = view
        .teams
        .iter()
        .map(|(t, n)| (t.name.as_str(), *n))
        .collect();
    assert_eq!(counts, [("T0", 3), ("T1", 0)]);
    // The end of the window, a viewer who is not a member, no details.
    let q = ViewQuery {
        viewer: UserId::generate(),
        offset: 4,
        limit: 10,
        details: false,
    };
    let view = s.organization_view(&o.id, &q).await.unwrap().unwrap();
    assert_eq!(
        view,
        compose_organization_view(&*s, &o.id, &q)
            .await
            .unwrap()
            .unwrap()
    );
    assert!(view.viewer.is_none());
    assert_eq!(view.members.len(), 2);
    assert_eq!(view.members[1].0.id, members[4].id);
    assert_eq!(
        view.members[1].1.as_ref().map(|u| &u.id),
        Some(&users[4].id)
    );
    assert!(view.invitations.is_empty() && view.teams.is_empty());
    // No such organization.
    assert!(s
        .organization_view(&OrgId::generate(), &q)
        .await
        .unwrap()
        .is_none());
}
