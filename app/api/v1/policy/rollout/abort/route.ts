/** POST /api/v1/policy/rollout/abort — end the running rollout: everyone back on the live version, the draft as it is. Optional body `{"reason": "…"}`. */
import { rolloutActionRoute } from "../action-route";

export const POST = rolloutActionRoute("abort");
