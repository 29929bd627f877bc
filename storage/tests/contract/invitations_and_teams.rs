//! Invitations that change state once, teams and custom roles.
use super::*;

pub async fn invitations_transition_once(s: S) {
    let owner = user("inv@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("inv-org");
    s.create_organization(&o, &member(&o, &owner, "owner"), None, &[])
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
    change(&s, &o.id, |_| {}, vec![OrgChange::Invite(inv.clone())])
        .await
        .unwrap();
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
    let transition = |to| OrgChange::TransitionInvitation {
        id: inv.id.clone(),
        from: InvitationStatus::Pending,
        to,
    };
    change(
        &s,
        &o.id,
        |_| {},
        vec![transition(InvitationStatus::Accepted)],
    )
    .await
    .unwrap();
    assert!(matches!(
        change(
            &s,
            &o.id,
            |_| {},
            vec![transition(InvitationStatus::Rejected)]
        )
        .await,
        Err(StoreError::Conflict("invitation"))
    ));
    assert_eq!(
        s.get_invitation(&inv.id).await.unwrap().unwrap().status,
        InvitationStatus::Accepted
    );
    let unknown = OrgChange::TransitionInvitation {
        id: InvitationId::generate(),
        from: InvitationStatus::Pending,
        to: InvitationStatus::Canceled,
    };
    assert!(matches!(
        change(&s, &o.id, |_| {}, vec![unknown]).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn teams_and_roles(s: S) {
    let owner = user("team@example.com");
    s.create_user(&owner, None, &[]).await.unwrap();
    let o = org("team-org");
    let om = member(&o, &owner, "owner");
    s.create_organization(&o, &om, None, &[]).await.unwrap();
    let t = Team {
        id: TeamId::generate(),
        name: "Core".into(),
        organization_id: o.id.clone(),
        created_at: now(),
        updated_at: None,
    };
    let ok = |changes: Vec<OrgChange>| {
        let s = s.clone();
        let o = o.id.clone();
        async move { change(&s, &o, |_| {}, changes).await }
    };
    ok(vec![OrgChange::CreateTeam(t.clone())]).await.unwrap();
    let mut dup = t.clone();
    dup.id = TeamId::generate();
    assert!(matches!(
        ok(vec![OrgChange::CreateTeam(dup)]).await,
        Err(StoreError::Conflict(_))
    ));
    let tm = TeamMember {
        id: TeamMemberId::generate(),
        team_id: t.id.clone(),
        user_id: owner.id.clone(),
        created_at: now(),
    };
    ok(vec![OrgChange::AddTeamMember(tm.clone())])
        .await
        .unwrap();
    assert_eq!(s.list_team_members(&t).await.unwrap(), vec![tm.clone()]);
    assert_eq!(s.list_user_teams(&owner.id).await.unwrap(), vec![t.clone()]);
    let mut renamed = t.clone();
    renamed.name = "Platform".into();
    renamed.updated_at = Some(now());
    ok(vec![OrgChange::UpdateTeam(renamed.clone())])
        .await
        .unwrap();
    assert_eq!(s.get_team(&t.id).await.unwrap(), Some(renamed));
    assert_eq!(s.list_teams(&o.id).await.unwrap().len(), 1);
    let leave = || OrgChange::RemoveTeamMember {
        team: t.id.clone(),
        user: owner.id.clone(),
    };
    ok(vec![leave()]).await.unwrap();
    assert!(matches!(ok(vec![leave()]).await, Err(StoreError::NotFound)));
    ok(vec![OrgChange::DeleteTeam(t.id.clone())]).await.unwrap();
    assert!(s.get_team(&t.id).await.unwrap().is_none());

    let r = OrganizationRole {
        id: RoleId::generate(),
        organization_id: o.id.clone(),
        role: "billing".into(),
        permission: "{\"member\":[\"create\"]}".into(),
        created_at: now(),
        updated_at: None,
    };
    let roles_changed = |changes: Vec<OrgChange>| {
        let s = s.clone();
        let o = o.id.clone();
        async move { change(&s, &o, |n| n.roles_version += 1, changes).await }
    };
    roles_changed(vec![OrgChange::CreateRole(r.clone())])
        .await
        .unwrap();
    let mut dup = r.clone();
    dup.id = RoleId::generate();
    assert!(matches!(
        roles_changed(vec![OrgChange::CreateRole(dup)]).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(stored(&s, &o.id).await.roles_version, 1);
    assert_eq!(
        s.get_role(&o.id, "billing").await.unwrap().as_ref(),
        Some(&r)
    );
    let mut changed = r.clone();
    changed.permission = "{}".into();
    changed.updated_at = Some(now());
    roles_changed(vec![OrgChange::UpdateRole(changed.clone())])
        .await
        .unwrap();
    assert_eq!(s.list_roles(&o.id).await.unwrap(), vec![changed]);
    roles_changed(vec![OrgChange::DeleteRole(r.id.clone())])
        .await
        .unwrap();
    assert!(s.get_role(&o.id, "billing").await.unwrap().is_none());
}
