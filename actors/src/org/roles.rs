//! Custom roles: create, update (rename only while nobody holds it), delete (only while nobody
//! holds it). Every change moves the organization's roles version, so every process's cached
//! policy is rebuilt before its next decision.
use super::{guarded, Acting, Decision, OrgActor, OrgState, RoleChange};
use crate::{ActorError, Escalation, Rule};
use policy::Permissions;
use storage::{OrgChange, OrganizationRole, RoleId};

impl OrgActor {
    pub(super) async fn role(
        &self,
        state: &mut OrgState,
        acting: &Acting,
        change: &RoleChange,
    ) -> Result<OrganizationRole, ActorError> {
        let reserved = |name: &str| {
            policy::BUILTIN_ROLES.contains(&name)
                || self
                    .shared
                    .config
                    .org
                    .global_roles
                    .iter()
                    .any(|(n, _)| n == name)
        };
        // A malformed role name or permission set is bad input, not an unknown role.
        let invalid = |e: policy::PolicyError| {
            ActorError::Refused(Rule::InvalidRoleDefinition(e.to_string()))
        };
        let json = |p: &Permissions| serde_json::to_string(p).unwrap_or_else(|_| "{}".into());
        guarded!(self, state, |org| async {
            let store = &self.shared.store;
            let now = self.shared.clock.now();
            let (changed, role) = match change {
                RoleChange::Create { role, permission } => {
                    let creator = self.check(state, &org, acting, "ac", "create").await?;
                    policy::validate_role_name(role).map_err(invalid)?;
                    policy::validate_permissions(permission).map_err(invalid)?;
                    self.may_grant(
                        state,
                        &org,
                        creator.as_ref(),
                        permission,
                        Escalation::CreateRole,
                    )
                    .await?;
                    if reserved(role) {
                        return Err(ActorError::Refused(Rule::RoleExists));
                    }
                    let r = OrganizationRole {
                        id: RoleId::generate(),
                        organization_id: state.id.clone(),
                        role: role.clone(),
                        permission: json(permission),
                        created_at: now,
                        updated_at: Some(now),
                    };
                    (OrgChange::CreateRole(r.clone()), r)
                }
                RoleChange::Update {
                    role,
                    new_name,
                    permission,
                } => {
                    let editor = self.check(state, &org, acting, "ac", "update").await?;
                    let mut r = store
                        .get_role(&state.id, role)
                        .await?
                        .ok_or(ActorError::Refused(Rule::RoleNotFound))?;
                    // A role stronger than the editor's own is not theirs to change (nor to
                    // weaken for the members who hold it), and what it becomes must be within
                    // it too.
                    let current =
                        serde_json::from_str::<Permissions>(&r.permission).map_err(|e| {
                            ActorError::Internal(format!("stored role permission: {e}"))
                        })?;
                    self.may_grant(
                        state,
                        &org,
                        editor.as_ref(),
                        &current,
                        Escalation::UpdateRole,
                    )
                    .await?;
                    if let Some(p) = permission {
                        policy::validate_permissions(p).map_err(invalid)?;
                        self.may_grant(state, &org, editor.as_ref(), p, Escalation::UpdateRole)
                            .await?;
                        r.permission = json(p);
                    }
                    if let Some(n) = new_name.as_ref().filter(|n| **n != r.role) {
                        policy::validate_role_name(n).map_err(invalid)?;
                        if reserved(n) {
                            return Err(ActorError::Refused(Rule::RoleExists));
                        }
                        if self.assigned(state, &r.role).await? {
                            return Err(ActorError::Refused(Rule::RoleInUse));
                        }
                        r.role = n.clone();
                    }
                    r.updated_at = Some(now);
                    (OrgChange::UpdateRole(r.clone()), r)
                }
                RoleChange::Delete { role } => {
                    self.check(state, &org, acting, "ac", "delete").await?;
                    let r = store
                        .get_role(&state.id, role)
                        .await?
                        .ok_or(ActorError::Refused(Rule::RoleNotFound))?;
                    // Deleting a role members still hold would leave them with an unknown
                    // role: refused until they are given another one.
                    if self.assigned(state, &r.role).await? {
                        return Err(ActorError::Refused(Rule::RoleInUse));
                    }
                    (OrgChange::DeleteRole(r.id.clone()), r)
                }
            };
            Ok(Decision::on(org, vec![changed], role).with(|o| o.roles_version += 1))
        })
    }

    /// Whether any member holds `role` (as of the version the decision is made on).
    async fn assigned(&self, state: &OrgState, role: &str) -> Result<bool, ActorError> {
        let members = self.shared.store.list_all_members(&state.id).await?;
        Ok(members
            .iter()
            .any(|m| policy::parse_roles(&m.role).contains(&role)))
    }
}
