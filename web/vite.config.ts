/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The dev server proxies the API to a Gatehouse on :3000; its own origin
// (http://localhost:5173) must be in the server's `trusted_origins` (see README).
export default defineConfig({
  plugins: [react()],
  server: {
    port: 5173,
    proxy: { "/api": { target: process.env.GATEHOUSE_URL ?? "http://localhost:3000" } },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    // No inline scripts or styles: the server's Content-Security-Policy forbids them.
    assetsInlineLimit: 0,
  },
  test: {
    environment: "jsdom",
    setupFiles: ["./src/test-setup.ts"],
    include: ["src/**/*.test.{ts,tsx}"],
  },
});
