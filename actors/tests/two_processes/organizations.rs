//! The organization rules between two processes: last owner, limits, roles, teams, memberships.

use super::*;

/// The two last owners remove each other, one from each process: one stays, every time.
pub(super) async fn two_last_owners_removing_each_other_leave_one(backend: Backend) {
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
pub(super) async fn joins_from_two_processes_stop_at_the_membership_limit(backend: Backend) {
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
pub(super) async fn a_role_revoked_in_one_process_stops_granting_in_the_other(backend: Backend) {
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
        let send = |to: String, again: bool| {
            let h = t.a.org(org.id.clone());
            let acting = as_inviter.clone();
            async move { h.invite(acting, &to, "member", None, again).await }
        };
        let invite = |to: String| send(to, false);
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
        // A's next decision already sees it: sending the first invitation again (an answer
        // that writes nothing, so no version check could catch a stale decision)…
        let r = send(format!("first{trial}@example.com"), true).await;
        assert!(
            matches!(r, Err(ActorError::Refused(Rule::Forbidden(..)))),
            "trial {trial}: sent again: {r:?}"
        );
        // …and a new one.
        let r = invite(format!("second{trial}@example.com")).await;
        assert!(
            matches!(r, Err(ActorError::Refused(Rule::Forbidden(..)))),
            "trial {trial}: {r:?}"
        );
    }
}

/// One user creating organizations from both processes at once never passes the per-user
/// limit (the count is decided on the user's version, which every new membership moves).
pub(super) async fn organizations_created_from_two_processes_stop_at_the_user_limit(
    backend: Backend,
) {
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

/// A custom role deleted in one process while the other assigns it: never a member holding a
/// role that no longer exists.
pub(super) async fn a_role_is_never_deleted_while_another_process_assigns_it(backend: Backend) {
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
pub(super) async fn removing_teams_from_two_processes_keeps_the_last_one(backend: Backend) {
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

/// An organization's actor keeps the memberships it read while the organization's version
/// stays the same; a change made in the other process moves the version, so this process's
/// next decision acts on the change: a demoted admin is refused, a promoted member allowed,
/// a deleted user's membership gone — never the memberships as this process last read them.
pub(super) async fn a_membership_changed_in_one_process_counts_in_the_others_next_decision(
    backend: Backend,
) {
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
