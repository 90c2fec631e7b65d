/** The control plane's Redis client: the same one the admin REST API uses (lib/http/deps.ts). */
export { controlPlaneRedis as appRedis } from "@/lib/http/deps";
