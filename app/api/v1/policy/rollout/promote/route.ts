/** POST /api/v1/policy/rollout/promote — move the running rollout to its next step now (the last publishes to everyone; resumes a paused one). Optional body `{"reason": "…"}`. */
import { rolloutActionRoute } from "../action-route";

export const POST = rolloutActionRoute("promote");
