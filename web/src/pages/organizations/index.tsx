// One organization's console: a tab per part (members, invitations, teams, roles, API keys, webhooks, settings,
// activity), each showing only what the member's permissions grant; and the list pages.
import { useQuery } from "@tanstack/react-query";
import { Link, Navigate, NavLink, useLocation, useParams } from "react-router";
import { api, unwrap } from "../../api";
import { AuditLog } from "../../components/audit";
import { ErrorBox, Notice } from "../../components/ui";
import { useSession } from "../../session";
import { useCan } from "./hooks";
import { marked, named, useT } from "../../i18n";
import { Members } from "./members";
import { Invitations } from "./invitations";
import { Teams } from "./teams";
import { Roles } from "./roles";
import { Settings } from "./settings";
import { ApiKeys } from "../apikeys";
import { Webhooks } from "../webhooks";

const TABS = ["members", "invitations", "teams", "roles", "keys", "webhooks", "settings"] as const;

/** Each section's name on its tab. */
const TAB_NAMES: Record<string, string> = {
  members: marked("Members"),
  invitations: marked("Invitations"),
  teams: marked("Teams"),
  roles: marked("Roles"),
  keys: marked("Keys"),
  webhooks: marked("Webhooks"),
  settings: marked("Settings"),
  activity: marked("Activity"),
};

/** The sections; "Activity" (the organization's audit log) for those who may update it. */
function OrgTabs({ orgId, tab }: { orgId: string; tab: string }) {
  const tr = useT();
  const canRead = useCan(orgId, { organization: ["update"] });
  // Only the sections the member can use: roles with ac:read, settings with a change to make.
  const canRoles = useCan(orgId, { ac: ["read"] });
  const canDelete = useCan(orgId, { organization: ["delete"] });
  const canKeys = useCan(orgId, { apiKey: ["read"] });
  const canHooks = useCan(orgId, { webhook: ["read"] });
  const shown = TABS.filter((t) =>
    t === "roles" ? canRoles : t === "keys" ? canKeys : t === "webhooks" ? canHooks : t === "settings" ? canRead || canDelete : true,
  );
  const tabs: string[] = canRead ? [...shown, "activity"] : [...shown];
  return (
    <nav className="tabs" aria-label={tr("Organization sections")}>
      {tabs.map((t) => (
        <NavLink key={t} to={`/organizations/${orgId}/${t}`} className={() => (t === tab ? "active" : "")}>
          {named(TAB_NAMES, t, tr)}
        </NavLink>
      ))}
    </nav>
  );
}

export function OrganizationPage() {
  const { id = "", tab = "members" } = useParams();
  const session = useSession();
  const t = useT();
  // Arrived from accepting an invitation.
  const joined = (useLocation().state as { joined?: string | null } | null)?.joined;
  const org = useQuery({
    queryKey: ["org", id],
    queryFn: () => unwrap(api.GET("/organization/get-full-organization", { params: { query: { organizationId: id } } })),
    enabled: !!session.data,
    retry: false,
  });
  if (session.isPending) return <main>{t("Loading…")}</main>;
  if (!session.data) return <Navigate to={`/sign-in?redirectTo=/organizations/${id}`} replace />;
  if (org.isPending) return <main>{t("Loading…")}</main>;
  if (!org.data)
    return (
      <main>
        <ErrorBox error={org.error} />
        <Link to="/organizations">{t("Back to your organizations")}</Link>
      </main>
    );
  const o = org.data;
  return (
    <main>
      <p className="muted">
        <Link to="/organizations">{t("Organizations")}</Link> /
      </p>
      <h1>{o.name}</h1>
      {joined && <Notice>{t("You joined {name}.", { name: o.name })}</Notice>}
      <OrgTabs orgId={o.id} tab={tab} />
      {tab === "members" && <Members org={o} me={session.data.user.id} />}
      {tab === "invitations" && <Invitations org={o} me={session.data.user.id} />}
      {tab === "teams" && <Teams org={o} />}
      {tab === "roles" && <Roles org={o} />}
      {tab === "keys" && <ApiKeys orgId={o.id} />}
      {tab === "webhooks" && <Webhooks orgId={o.id} />}
      {tab === "settings" && <Settings org={o} key={o.name + o.slug} />}
      {tab === "activity" && (
        <section className="card" aria-label={t("Activity")}>
          <AuditLog organizationId={o.id} me={session.data.user.id} names={Object.fromEntries(o.members.flatMap((m) => (m.user ? [[m.userId, m.user.name]] : [])))} />
        </section>
      )}
    </main>
  );
}

/** Where invitation mails point: answer it signed in, or sign in / up and come back. */

export { AcceptInvitation, Organizations } from "./list";
export { allowed, slugify, useCan, usePermissions, useSlugStatus } from "./hooks";
