//! What an organization's decisions emit: a domain event per change, with the member or the
//! invitation the decision's answer was about, and the request's notes and mail.
use super::*;
use crate::events::When;

/// What a decision's answer tells its events: the member and the invitation it was about.
pub(crate) trait Answer {
    fn facts(&self) -> (Option<&Member>, Option<&Invitation>) {
        (None, None)
    }
}

impl Answer for Member {
    fn facts(&self) -> (Option<&Member>, Option<&Invitation>) {
        (Some(self), None)
    }
}

impl Answer for Invitation {
    fn facts(&self) -> (Option<&Member>, Option<&Invitation>) {
        (None, Some(self))
    }
}

impl Answer for (Invitation, Option<Member>) {
    fn facts(&self) -> (Option<&Member>, Option<&Invitation>) {
        (self.1.as_ref(), Some(&self.0))
    }
}

impl Answer for Organization {}
impl Answer for TeamOutcome {}
impl Answer for OrganizationRole {}

impl OrgActor {
    /// What a decision emits: a domain event per change (the object from the change, or from
    /// the decision's answer), and the request's notes and mail.
    pub(super) fn events_of<T: Answer>(
        &self,
        state: &OrgState,
        d: &Decision<T>,
    ) -> Vec<storage::Event> {
        let (member, invitation) = d.value.facts();
        let mut e = Emit::org(&state.id, self.shared.clock.now());
        if d.unchanged {
            return e.request(&state.ctx, &Facts::default()).done();
        }
        let mut happened = Vec::new();
        if d.changes.is_empty() {
            e = e.domain("organization.updated", data::org(&d.next));
        }
        // `null` when the answer did not name it (never, for these changes).
        let about_member = || member.map(data::member);
        let about_invitation = || invitation.map(data::invitation);
        for c in &d.changes {
            e = match c {
                OrgChange::AddMember(m) => {
                    happened.push(When::MemberAdded);
                    e.domain("member.added", data::member(m))
                }
                OrgChange::SetMemberRole { .. } => e.domain("member.role_changed", about_member()),
                OrgChange::RemoveMember(_) => e.domain("member.removed", about_member()),
                OrgChange::Invite(i) => e.domain("invitation.created", data::invitation(i)),
                OrgChange::TransitionInvitation { to, .. } => {
                    let name = match to {
                        storage::InvitationStatus::Accepted => "invitation.accepted",
                        storage::InvitationStatus::Rejected => "invitation.rejected",
                        _ => "invitation.canceled",
                    };
                    e.domain(name, about_invitation())
                }
                OrgChange::CreateTeam(t) => e.domain("team.created", data::team(t)),
                OrgChange::UpdateTeam(t) => e.domain("team.updated", data::team(t)),
                OrgChange::DeleteTeam(t) => e.domain("team.deleted", serde_json::json!({"id": t})),
                OrgChange::AddTeamMember(tm) => e.domain(
                    "team.member_added",
                    serde_json::json!({"teamId": tm.team_id, "userId": tm.user_id}),
                ),
                OrgChange::RemoveTeamMember { team, user } => e.domain(
                    "team.member_removed",
                    serde_json::json!({"teamId": team, "userId": user}),
                ),
                OrgChange::CreateRole(r) => e.domain(
                    "role.created",
                    serde_json::json!({"id": r.id, "role": r.role, "organizationId": r.organization_id}),
                ),
                OrgChange::UpdateRole(r) => e.domain(
                    "role.updated",
                    serde_json::json!({"id": r.id, "role": r.role, "organizationId": r.organization_id}),
                ),
                OrgChange::DeleteRole(r) => e.domain("role.deleted", serde_json::json!({"id": r})),
            };
        }
        let facts = Facts {
            member,
            invitation,
            org: Some(&d.next),
            happened: &happened,
            ..Facts::default()
        };
        e.request(&state.ctx, &facts).done()
    }
}
