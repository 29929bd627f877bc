//! Organizations as a store: the `OrganizationStore` methods (each a decision with its events,
//! see `stream`) and the writes they run — create (slug claim, then the partition), change (one
//! conditional batch on the version, lookups after), delete (the version, then the rows).
use super::organizations::*;
use super::*;
use crate::*;
use async_trait::async_trait;

#[async_trait]
impl OrganizationStore for ScyllaStore {
    async fn create_organization(
        &self,
        org: &Organization,
        owner: &Member,
        creator_version: Option<u64>,
        events: &[Event],
    ) -> StoreResult<()> {
        let id = org.id.0.clone();
        self.decide(
            events,
            |_| Probe::OrgExists { org: id },
            always,
            |_| self.found_organization(org, owner, creator_version),
        )
        .await
    }

    async fn get_organization(&self, id: &OrgId) -> StoreResult<Option<Organization>> {
        let Some(row) = self
            .row(
                &format!(
                    "SELECT {STATIC_COLS} FROM {} WHERE org_id = ? LIMIT 1",
                    self.t("org_rows")
                ),
                vec![text(&id.0)],
            )
            .await?
        else {
            return Ok(None);
        };
        org_of(id, &Cols(&row), 0)
    }

    async fn get_organization_by_slug(&self, slug: &str) -> StoreResult<Option<Organization>> {
        let Some(row) = self
            .row(
                &format!(
                    "SELECT org_id FROM {} WHERE slug = ?",
                    self.t("orgs_by_slug")
                ),
                vec![text(slug)],
            )
            .await?
        else {
            return Ok(None);
        };
        let id = OrgId(Cols(&row).text(0)?);
        Ok(self.get_organization(&id).await?.filter(|o| o.slug == slug))
    }

    async fn change_organization(
        &self,
        next: &Organization,
        changes: &[OrgChange],
        events: &[Event],
    ) -> StoreResult<()> {
        let (id, version) = (next.id.0.clone(), next.version);
        self.decide(
            events,
            |_| Probe::OrgDecision { org: id, version },
            always,
            |d| self.write_organization(next, changes, d),
        )
        .await
    }

    async fn delete_organization(
        &self,
        id: &OrgId,
        expected: u64,
        events: &[Event],
    ) -> StoreResult<()> {
        let org = id.0.clone();
        self.decide(
            events,
            |_| Probe::OrgGone { org },
            always,
            |_| self.remove_organization(id, expected),
        )
        .await
    }

    async fn list_user_organizations(&self, user_id: &UserId) -> StoreResult<Vec<Organization>> {
        let mut orgs = Vec::new();
        for (id, _) in self.user_org_entries(user_id).await? {
            if let Some(o) = self.get_organization(&id).await? {
                orgs.push(o);
            }
        }
        orgs.sort_by(|a, b| (a.created_at, &a.id.0).cmp(&(b.created_at, &b.id.0)));
        Ok(orgs)
    }

    async fn count_user_organizations(&self, user: &UserId) -> StoreResult<u64> {
        let now = chrono::Utc::now().timestamp_millis();
        let mut n = 0;
        for (id, since) in self.user_org_entries(user).await? {
            // An entry whose organization is not (yet) there is a creation or join under way,
            // or one that failed and could not clean up: counted while it is recent.
            if now - since < PENDING_ENTRY_MS || self.get_organization(&id).await?.is_some() {
                n += 1;
            }
        }
        Ok(n)
    }
}

/// The writes themselves; the trait's methods run them as decisions with their events
/// (see `stream`).
impl ScyllaStore {
    pub(crate) async fn found_organization(
        &self,
        org: &Organization,
        owner: &Member,
        creator_version: Option<u64>,
    ) -> StoreResult<()> {
        // The lookup first: a count of the user's organizations made once the version below
        // has moved sees this one (see `count_user_organizations`). Removed again on failure.
        self.add_user_org(&owner.user_id, &org.id).await?;
        let created = self.insert_organization(org, owner, creator_version).await;
        if created.is_err() {
            self.remove_user_org(&owner.user_id, &org.id).await?;
        }
        created
    }

    /// Reads the partition at the serial consistency, checks the changes against it, and
    /// writes them as one conditional batch on the version read: nothing of it applies if
    /// anyone changed the organization meanwhile.
    pub(crate) async fn write_organization(
        &self,
        next: &Organization,
        changes: &[OrgChange],
        decision: Option<Decision>,
    ) -> StoreResult<()> {
        let expected = next
            .version
            .checked_sub(1)
            .ok_or_else(|| StoreError::Internal("a changed organization's version is 0".into()))?;
        let snap = self.snapshot(&next.id).await?;
        let Some(current) = snap.org.as_ref() else {
            return Err(StoreError::NotFound);
        };
        if current.version != expected {
            return Err(StoreError::ConcurrentModification);
        }
        let plan = self.plan(&next.id, &snap, changes)?;
        let new_slug = current.slug != next.slug;
        if new_slug {
            self.claim_slug(&next.slug, &next.id).await?;
        }
        for user in &plan.joins {
            self.add_user_org(user, &next.id).await?;
            self.bump_user(user).await?;
        }
        let mut statements = vec![self.static_update(next, expected)];
        statements.extend(plan.statements);
        statements.extend(
            decision.map(|d| d.stamp(self, "org_rows", ("org_id", &next.id.0), next.version)),
        );
        if !self.batch_lwt(statements).await? {
            if new_slug {
                self.release_slug(&next.slug, &next.id).await?;
            }
            for user in &plan.joins {
                self.remove_user_org(user, &next.id).await?;
            }
            return Err(StoreError::ConcurrentModification);
        }
        for user in &plan.left {
            self.remove_user_org(user, &next.id).await?;
        }
        if new_slug {
            self.release_slug(&current.slug, &next.id).await?;
        }
        for (cql, v) in plan.after {
            self.exec(&cql, v).await?;
        }
        if !plan.left.is_empty() {
            self.clear_active(&plan.left, &next.id, None).await?;
        }
        if !plan.cleared_teams.is_empty() {
            let members: Vec<UserId> = snap.members.iter().map(|m| m.user_id.clone()).collect();
            for team in &plan.cleared_teams {
                self.clear_active(&members, &next.id, Some(team)).await?;
            }
        }
        Ok(())
    }

    pub(crate) async fn remove_organization(&self, id: &OrgId, expected: u64) -> StoreResult<()> {
        let snap = self.snapshot(id).await?;
        let Some(org) = snap.org.as_ref() else {
            return Err(StoreError::NotFound);
        };
        if org.version != expected {
            return Err(StoreError::ConcurrentModification);
        }
        // The deletion itself: one conditional write that clears the name (an organization
        // without one reads as gone, with all its rows) and moves the version (every later
        // change of it fails). A conditional delete of a whole partition does not exist in CQL.
        let deleted = self
            .lwt(
                &format!(
                    "UPDATE {} SET o_name = null, version = ? WHERE org_id = ? IF version = ?",
                    self.t("org_rows")
                ),
                vec![big(expected as i64 + 1), text(&id.0), big(expected as i64)],
            )
            .await?;
        if !deleted {
            return Err(StoreError::ConcurrentModification);
        }
        // Then the data, and everything that pointed at it, idempotently.
        self.exec(
            &format!("DELETE FROM {} WHERE org_id = ?", self.t("org_rows")),
            vec![text(&id.0)],
        )
        .await?;
        self.release_slug(&org.slug, id).await?;
        let members: Vec<UserId> = snap.members.iter().map(|m| m.user_id.clone()).collect();
        for u in &members {
            self.remove_user_org(u, id).await?;
        }
        for i in &snap.invitations {
            self.exec(
                &format!("DELETE FROM {} WHERE id = ?", self.t("invitations_by_id")),
                vec![text(&i.id.0)],
            )
            .await?;
            self.exec(
                &format!(
                    "DELETE FROM {} WHERE email = ? AND id = ?",
                    self.t("invitations_by_email")
                ),
                vec![text(&i.email), text(&i.id.0)],
            )
            .await?;
        }
        for t in &snap.teams {
            self.exec(
                &format!("DELETE FROM {} WHERE id = ?", self.t("teams_by_id")),
                vec![text(&t.id.0)],
            )
            .await?;
        }
        for tm in &snap.team_members {
            self.exec(
                &format!(
                    "DELETE FROM {} WHERE user_id = ? AND team_id = ?",
                    self.t("team_members_by_user")
                ),
                vec![text(&tm.user_id.0), text(&tm.team_id.0)],
            )
            .await?;
        }
        self.clear_active(&members, id, None).await
    }
}

/// Slug claims, the user lookups beside the partition, and a new organization's rows.
impl ScyllaStore {
    /// Claims `slug` for `org` (taking over a claim left by a crash).
    pub(super) async fn claim_slug(&self, slug: &str, org: &OrgId) -> StoreResult<()> {
        let now = Utc::now().timestamp_millis();
        let claimed = self
            .lwt(
                &format!(
                    "INSERT INTO {} (slug, org_id, claimed_at) VALUES (?, ?, ?) IF NOT EXISTS",
                    self.t("orgs_by_slug")
                ),
                vec![text(slug), text(&org.0), big(now)],
            )
            .await?;
        if claimed {
            return Ok(());
        }
        let Some(row) = super::rows_of(
            self.exec_serial(
                &format!(
                    "SELECT org_id, claimed_at FROM {} WHERE slug = ?",
                    self.t("orgs_by_slug")
                ),
                vec![text(slug)],
            )
            .await?,
        )?
        .into_iter()
        .next() else {
            return Box::pin(self.claim_slug(slug, org)).await;
        };
        let c = Cols(&row);
        let holder = OrgId(c.text(0)?);
        if holder == *org {
            return Ok(());
        }
        let live = self
            .get_organization(&holder)
            .await?
            .is_some_and(|o| o.slug == slug);
        if live || now - c.big(1) < ORPHAN_CLAIM_MS {
            return Err(StoreError::Conflict("slug"));
        }
        let taken = self
            .lwt(
                &format!(
                    "UPDATE {} SET org_id = ?, claimed_at = ? WHERE slug = ? IF org_id = ?",
                    self.t("orgs_by_slug")
                ),
                vec![text(&org.0), big(now), text(slug), text(&holder.0)],
            )
            .await?;
        if taken {
            Ok(())
        } else {
            Err(StoreError::Conflict("slug"))
        }
    }

    pub(super) async fn release_slug(&self, slug: &str, org: &OrgId) -> StoreResult<()> {
        self.lwt(
            &format!(
                "DELETE FROM {} WHERE slug = ? IF org_id = ?",
                self.t("orgs_by_slug")
            ),
            vec![text(slug), text(&org.0)],
        )
        .await?;
        Ok(())
    }

    pub(super) fn team_lookup_delete(&self, user: &UserId, team: &TeamId) -> (String, Vec<V>) {
        (
            format!(
                "DELETE FROM {} WHERE user_id = ? AND team_id = ?",
                self.t("team_members_by_user")
            ),
            vec![text(&user.0), text(&team.0)],
        )
    }

    /// Creates the organization once its creator's lookup entry is written: the creator's
    /// version, the slug claim, then the partition.
    pub(super) async fn insert_organization(
        &self,
        org: &Organization,
        owner: &Member,
        creator_version: Option<u64>,
    ) -> StoreResult<()> {
        match creator_version {
            Some(v) => self.cas_user_version(&owner.user_id, v, None).await?,
            None => self.bump_user(&owner.user_id).await?,
        }
        self.claim_slug(&org.slug, &org.id).await?;
        let o = org;
        let created = self
            .lwt(
                &format!(
                    "INSERT INTO {} (org_id, kind, key, id, user_id, role, team_id, created_at, \
                     o_name, o_slug, o_logo, o_metadata, o_created_at, version, member_count, \
                     owner_count, roles_version) \
                     VALUES (?, 'member', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, 0) IF NOT EXISTS",
                    self.t("org_rows")
                ),
                vec![
                    text(&o.id.0),
                    text(&owner.user_id.0),
                    text(&owner.id.0),
                    text(&owner.user_id.0),
                    text(&owner.role),
                    otext(owner.team_id.as_ref().map(|t| t.0.as_str())),
                    ms(&owner.created_at),
                    text(&o.name),
                    text(&o.slug),
                    otext(o.logo.as_deref()),
                    otext(o.metadata.as_deref()),
                    ms(&o.created_at),
                    int(o.member_count as i32),
                    int(o.owner_count as i32),
                ],
            )
            .await?;
        if !created {
            self.release_slug(&org.slug, &org.id).await?;
            return Err(StoreError::Conflict("organization"));
        }
        Ok(())
    }

    /// The organizations a user's lookup lists, with when each entry was written (ms).
    pub(super) async fn user_org_entries(&self, user: &UserId) -> StoreResult<Vec<(OrgId, i64)>> {
        self.rows(
            &format!(
                "SELECT org_id, since FROM {} WHERE user_id = ?",
                self.t("orgs_by_user")
            ),
            vec![text(&user.0)],
        )
        .await?
        .iter()
        .map(|r| {
            let c = Cols(r);
            Ok((OrgId(c.text(0)?), c.big(1)))
        })
        .collect()
    }

    pub(crate) async fn add_user_org(&self, user: &UserId, org: &OrgId) -> StoreResult<()> {
        self.exec(
            &format!(
                "INSERT INTO {} (user_id, org_id, since) VALUES (?, ?, ?)",
                self.t("orgs_by_user")
            ),
            vec![text(&user.0), text(&org.0), ms(&chrono::Utc::now())],
        )
        .await
        .map(|_| ())
    }

    pub(crate) async fn remove_user_org(&self, user: &UserId, org: &OrgId) -> StoreResult<()> {
        self.exec(
            &format!(
                "DELETE FROM {} WHERE user_id = ? AND org_id = ?",
                self.t("orgs_by_user")
            ),
            vec![text(&user.0), text(&org.0)],
        )
        .await
        .map(|_| ())
    }

    /// Removes `user` from every organization it belongs to (deleting the user), each through
    /// the organization's version.
    pub(crate) async fn leave_all_organizations(&self, user: &UserId) -> StoreResult<()> {
        let orgs = self.user_org_entries(user).await?;
        for (org, _) in orgs {
            loop {
                let snap = self.snapshot(&org).await?;
                let (Some(o), Some(m)) = (
                    snap.org.as_ref(),
                    snap.members.iter().find(|m| &m.user_id == user),
                ) else {
                    break;
                };
                let mut next = o.clone();
                next.version += 1;
                next.member_count = next.member_count.saturating_sub(1);
                next.owner_count = next
                    .owner_count
                    .saturating_sub(u32::from(holds_owner(&m.role)));
                let plan = self.plan(&org, &snap, &[OrgChange::RemoveMember(m.id.clone())])?;
                let mut statements = vec![self.static_update(&next, o.version)];
                statements.extend(plan.statements);
                if self.batch_lwt(statements).await? {
                    for (cql, v) in plan.after {
                        self.exec(&cql, v).await?;
                    }
                    break;
                }
            }
        }
        Ok(())
    }
}
