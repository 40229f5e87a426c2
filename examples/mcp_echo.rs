//! The floor of the benchmark's MCP hop (docs/performance.md): a minimal MCP server on stdio,
//! built on the same rmcp and the same runtime as `askrelay mcp` (one thread), whose
//! `ask_user_question` answers at once with a fixed result of the size askrelay's has. What a
//! `tools/call` costs through it is what any rmcp server on stdio costs: two pipe transfers and
//! rmcp's JSON-RPC both ways, with nothing behind the tool.
//!
//! ```text
//! cargo build --release --example mcp_echo   # the benchmark builds it with itself
//! ```

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};

/// What askrelay's tool returns for the benchmark's question, clicked on its first button.
const RESULT: &str = r#"{"answers":{"go":{"selected":["Yes, delete them (Recommended)"],"answered_by":{"id":"4242","name":"bench-person","via":"discord"}}},"request_id":"mcp-00000000-0000-0000-0000-000000000000"}"#;

#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut schema = rmcp::model::JsonObject::new();
        schema.insert("type".into(), "object".into());
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "ask_user_question",
            "Answers at once",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        Ok(CallToolResult::success(vec![ContentBlock::text(RESULT.to_owned())]).into())
    }
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let running = Echo
            .serve(rmcp::transport::stdio_pipes())
            .await
            .map_err(|e| anyhow::anyhow!("the MCP session did not start: {e}"))?;
        running.waiting().await?;
        anyhow::Ok(())
    })
}
