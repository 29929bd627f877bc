// Test helpers: render a page with a fresh query client and router, and a fetch stand-in
// that answers by route (the server's wire shapes) and records what was sent.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import type { ReactNode } from "react";
import { MemoryRouter, Route, Routes } from "react-router";
import { vi } from "vitest";

export type Reply =
  | { status?: number; body: unknown; headers?: Record<string, string> }
  | Promise<{ status?: number; body: unknown; headers?: Record<string, string> }>;
export type Handler = (body: unknown, url: URL) => Reply;

export interface Sent {
  method: string;
  path: string;
  body: unknown;
}

/** Routes `METHOD /path` (under /api/auth) to handlers; unknown routes answer 404. */
export function mockServer(routes: Record<string, Handler>) {
  const sent: Sent[] = [];
  const fetch = vi.fn(async (input: Request) => {
    const url = new URL(input.url);
    const path = url.pathname.replace(/^\/api\/auth/, "");
    const text = input.method === "GET" ? "" : await input.text();
    const body = text ? JSON.parse(text) : undefined;
    sent.push({ method: input.method, path, body });
    const handler = routes[`${input.method} ${path}`];
    const reply = handler ? await handler(body, url) : { status: 404, body: { code: "NOT_FOUND", message: "Not found" } };
    return new Response(JSON.stringify(reply.body), {
      status: reply.status ?? 200,
      headers: { "content-type": "application/json", ...("headers" in reply ? reply.headers : {}) },
    });
  });
  vi.stubGlobal("fetch", fetch);
  return { sent, fetch };
}

export function renderAt(path: string, routes: { path: string; element: ReactNode }[]) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  return render(
    <QueryClientProvider client={client}>
      <MemoryRouter initialEntries={[path]}>
        <Routes>
          {routes.map((r) => (
            <Route key={r.path} path={r.path} element={r.element} />
          ))}
          <Route path="*" element={<p>elsewhere</p>} />
        </Routes>
      </MemoryRouter>
    </QueryClientProvider>,
  );
}

export const user = {
  id: "u1",
  name: "Ann",
  email: "ann@example.com",
  emailVerified: true,
  image: null,
  role: "user",
  banned: false,
  banReason: null,
  banExpires: null,
  twoFactorEnabled: false,
  createdAt: "2026-11-01T10:00:00.000Z",
  updatedAt: "2026-11-01T10:00:00.000Z",
};

export const session = {
  session: {
    id: "s1",
    token: "t1",
    userId: "u1",
    expiresAt: "2026-12-01T10:00:00.000Z",
    createdAt: "2026-11-20T10:00:00.000Z",
    updatedAt: "2026-11-20T10:00:00.000Z",
    ipAddress: "127.0.0.1",
    userAgent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0 Safari/537.36",
    activeOrganizationId: null,
    activeTeamId: null,
    impersonatedBy: null,
  },
  user,
};

/** A reply that never comes until `release` is called (for pending states). */
export function deferred(): { reply: Promise<{ status?: number; body: unknown }>; release: (r: { status?: number; body: unknown }) => void } {
  let release!: (r: { status?: number; body: unknown }) => void;
  const reply = new Promise<{ status?: number; body: unknown }>((r) => (release = r));
  return { reply, release };
}
