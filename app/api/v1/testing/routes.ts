/** What the admin API's route handler tests share: their stores, and a request as a handler receives it. */
import { beforeAll } from "vitest";
import { freshStoresPerFile, testRedisUrl } from "@/test/helpers";

/** freshStoresPerFile, with the route handlers pointed at them: they read DATABASE_URL and REDIS_URL. */
export function routeStoresPerFile(namespace: string): ReturnType<typeof freshStoresPerFile> {
  const stores = freshStoresPerFile(namespace);
  beforeAll(() => {
    process.env.DATABASE_URL = stores.url;
    process.env.REDIS_URL = testRedisUrl();
  });
  return stores;
}

/** A request to the admin policy API, as a route handler under app/api/v1/policy receives it. */
export function policyRequest(pathAndQuery: string, init: RequestInit & { token?: string | null } = {}): Request {
  const headers = new Headers(init.headers);
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  return new Request(`http://localhost:3000/api/v1/policy${pathAndQuery}`, { method: init.method ?? "POST", body: init.body, headers });
}
