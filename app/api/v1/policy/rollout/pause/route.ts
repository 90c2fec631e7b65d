/** POST /api/v1/policy/rollout/pause — stop advancing the running rollout; the cohort keeps the new version. Optional body `{"reason": "…"}`. */
import { rolloutActionRoute } from "../action-route";

export const POST = rolloutActionRoute("pause");
