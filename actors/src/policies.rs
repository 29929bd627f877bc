//! Organizations' policies, shared by this process: built once per organization and roles
//! version, used by the organization actors' decisions and by permission reads, which run
//! outside the actors' mailboxes (a `has-permission` never waits behind a write). An entry is
//! trusted only for the roles version it was built at: every role change moves the version in
//! the same write, here or in another process, so a revoked permission stops granting at once.
use crate::{ActorError, Shared};
use policy::{Permissions, Policy};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use storage::{Member, OrgId, Organization};

/// Organizations' policies kept at most (then the table starts over).
const KEPT: usize = 4096;

#[derive(Default)]
pub(crate) struct Policies(Mutex<HashMap<OrgId, (u64, Arc<Policy>)>>);

impl Policies {
    fn get(&self, org: &OrgId, roles_version: u64) -> Option<Arc<Policy>> {
        let map = self.0.lock().ok()?;
        map.get(org)
            .filter(|(v, _)| *v == roles_version)
            .map(|(_, p)| p.clone())
    }

    fn put(&self, org: &OrgId, roles_version: u64, p: Arc<Policy>) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= KEPT {
                map.clear();
            }
            map.insert(org.clone(), (roles_version, p));
        }
    }
}

impl Shared {
    /// The policy of `org` as of its roles version (the shared base policy when it has no
    /// custom roles).
    pub(crate) async fn policy_of(&self, org: &Organization) -> Result<Arc<Policy>, ActorError> {
        if let Some(p) = self.policies.get(&org.id, org.roles_version) {
            return Ok(p);
        }
        let custom: Vec<(String, Permissions)> = self
            .store
            .list_roles(&org.id)
            .await?
            .into_iter()
            .filter_map(|r| {
                serde_json::from_str::<Permissions>(&r.permission)
                    .ok()
                    .map(|p| (r.role, p))
            })
            .collect();
        let p = if custom.is_empty() {
            self.base_policy.clone()
        } else {
            Arc::new(
                Policy::new(&org.id.0, &self.config.org.global_roles, &custom)
                    .await
                    .map_err(|e| ActorError::Internal(e.to_string()))?,
            )
        };
        self.policies.put(&org.id, org.roles_version, p.clone());
        Ok(p)
    }
}

/// A member's standing in an organization, read without its actor.
pub struct Standing {
    pub member: Member,
    policy: Arc<Policy>,
}

impl Standing {
    /// Whether the member's roles grant every permission of `perms`.
    pub fn allows_all(&self, perms: &Permissions) -> Result<bool, ActorError> {
        self.policy
            .allows_all(&self.member.role, perms)
            .map_err(crate::org::policy_err)
    }

    /// Every permission the member's roles grant.
    pub fn permissions(&self) -> Result<Permissions, ActorError> {
        self.policy
            .permissions_of(&self.member.role)
            .map(std::borrow::Cow::into_owned)
            .map_err(crate::org::policy_err)
    }
}

impl crate::Actors {
    /// `user`'s standing in `org` — membership and policy — read from the store and the
    /// policies this process holds, never through the organization's actor:
    /// `Refused(OrganizationNotFound)` / `Refused(NotAMember)` otherwise.
    pub async fn standing(
        &self,
        org: &OrgId,
        user: &storage::UserId,
    ) -> Result<Standing, ActorError> {
        let store = &self.shared.store;
        let (o, m) = futures::try_join!(store.get_organization(org), store.get_member(org, user))
            .map_err(ActorError::from)?;
        let o = o.ok_or(ActorError::Refused(crate::Rule::OrganizationNotFound))?;
        let member = m.ok_or(ActorError::Refused(crate::Rule::NotAMember))?;
        let policy = self.shared.policy_of(&o).await?;
        Ok(Standing { member, policy })
    }
}
