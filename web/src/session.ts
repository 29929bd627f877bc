// The signed-in state: one query of get-session that every page shares.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type SessionWithUser } from "./api";

export const SESSION_KEY = ["session"] as const;

export function useSession() {
  return useQuery({
    queryKey: SESSION_KEY,
    queryFn: () => unwrap(api.GET("/get-session", { params: { query: { disableCookieCache: true } } })) as Promise<SessionWithUser | null>,
    staleTime: 30_000,
  });
}

/** Answers that are the server's, not the user's: kept when the session changes. */
const SERVER_WIDE = new Set<unknown>(["page-settings", "social-providers"]);

/** Forgets every cached answer after the session changed (sign-in, sign-out, switching), but
 * the server's own settings. */
export function useSessionChanged() {
  const qc = useQueryClient();
  return async () => {
    qc.removeQueries({ predicate: (q) => q.queryKey[0] !== SESSION_KEY[0] && !SERVER_WIDE.has(q.queryKey[0]) });
    await qc.invalidateQueries({ queryKey: SESSION_KEY });
  };
}
