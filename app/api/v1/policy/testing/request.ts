/** A request to the admin policy API, as a route handler under app/api/v1/policy receives it. */
export function policyRequest(pathAndQuery: string, init: RequestInit & { token?: string | null } = {}): Request {
  const headers = new Headers(init.headers);
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  return new Request(`http://localhost:3000/api/v1/policy${pathAndQuery}`, { method: init.method ?? "POST", body: init.body, headers });
}
