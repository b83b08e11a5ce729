/** What an exported chat notebook is, for the commands that continue one (`imports.ts`). */

/** Whether notebook metadata is an exported chat's (`metadata.jupyter_agent.runs`). */
export function isExport(metadata: { [key: string]: any } | undefined): boolean {
  const agent = metadata?.jupyter_agent;
  return !!agent && Array.isArray(agent.runs) && agent.runs.length > 0;
}
