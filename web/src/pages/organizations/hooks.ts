// Organization pages' shared hooks: the member's permissions (asked once per organization),
// slugs, the role names an organization offers.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, unwrap } from "../../api";
import { marked, named, namedList, type T } from "../../i18n";

export type Perms = Record<string, string[]>;

/** Everything the signed-in member may do in `orgId`: one request, shared by the page. */
export function usePermissions(orgId: string) {
  return useQuery({
    queryKey: ["permissions", orgId],
    queryFn: () => unwrap(api.GET("/organization/get-member-permissions", { params: { query: { organizationId: orgId } } })),
    staleTime: 30_000,
  });
}

/** Whether the signed-in member may do all of `perms` in `orgId` (from [`usePermissions`]). */
export function useCan(orgId: string, perms: Perms) {
  const granted = usePermissions(orgId).data?.permissions;
  return granted !== undefined && allowed(granted, perms);
}

/** Whether `granted` holds every action of `perms`. */
export function allowed(granted: Perms, perms: Perms): boolean {
  return Object.entries(perms).every(([resource, actions]) => actions.every((a) => (granted[resource] ?? []).includes(a)));
}

export function slugify(name: string): string {
  return name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
}

const SLUG = /^[a-z0-9_-]{1,64}$/;

/** The slug's availability, asked of the server once typing pauses. */
export function useSlugStatus(slug: string) {
  const [debounced, setDebounced] = useState(slug);
  useEffect(() => {
    const t = setTimeout(() => setDebounced(slug), 300);
    return () => clearTimeout(t);
  }, [slug]);
  const valid = SLUG.test(debounced);
  const q = useQuery({
    queryKey: ["slug", debounced],
    queryFn: () => unwrap(api.POST("/organization/check-slug", { body: { slug: debounced } })),
    enabled: valid,
    retry: false,
  });
  if (!slug) return null;
  if (!SLUG.test(slug)) return marked("Use 1–64 lowercase letters, digits, - or _.");
  if (debounced !== slug || q.isPending) return "checking";
  return q.isError ? "taken" : "available";
}

export function useRoleNames(orgId: string) {
  const catalog = useQuery({ queryKey: ["catalog"], queryFn: () => unwrap(api.GET("/organization/permission-catalog")), staleTime: Infinity });
  const custom = useQuery({
    queryKey: ["roles", orgId],
    queryFn: () => unwrap(api.GET("/organization/list-roles", { params: { query: { organizationId: orgId } } })),
    retry: false,
  });
  return [...(catalog.data?.roles.map((r) => r.role) ?? ["owner", "admin", "member"]), ...(custom.data ?? []).map((r) => r.role)];
}

/** The roles of `userId` in `org` (a member's role is a comma-separated list). */
export function rolesOf(org: { members: { userId: string; role: string }[] }, userId: string): string[] {
  return org.members.find((m) => m.userId === userId)?.role.split(",") ?? [];
}

/** The roles a member holding `mine` may hand out: owner only by an owner, admin by an owner
 * or an admin (the server refuses any other; it also checks custom roles' permissions). */
export function grantable(roles: string[], mine: string[]): string[] {
  const owner = mine.includes("owner");
  const admin = owner || mine.includes("admin");
  return roles.filter((r) => (r === "owner" ? owner : r === "admin" ? admin : true));
}

const BUILT_IN: Record<string, string> = { owner: marked("owner"), admin: marked("admin"), member: marked("member") };

/** A role as the pages show it: the built-in ones in the page's language, custom ones as named. */
export function roleName(role: string, t: T): string {
  return named(BUILT_IN, role, t);
}

/** A member's roles (a comma-separated list), each as the pages show it. */
export function rolesName(roles: string, t: T): string {
  return namedList(BUILT_IN, roles, t);
}

const STATUS: Record<string, string> = {
  pending: marked("pending"),
  accepted: marked("accepted"),
  rejected: marked("rejected"),
  canceled: marked("canceled"),
  expired: marked("expired"),
};

/** An invitation's status in the page's language. */
export function statusName(status: string, t: T): string {
  return named(STATUS, status, t);
}

/** How many members hold `owner`. */
export function ownerCount(org: { members: { role: string }[] }): number {
  return org.members.filter((m) => m.role.split(",").includes("owner")).length;
}
