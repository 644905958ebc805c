-- A user's own microbenchmark from a .sql file: each event runs every statement of the file, in
-- order, on one connection (no prepared statements: the file may hold DDL).
-- Usage: sysbench pgolab_sql.lua --sql-file=PATH run
-- Statements end with ';' at the end of a line; lines starting with '--' are comments.

sysbench.cmdline.options = {
   sql_file = {"File of SQL statements run in order as one event", ""},
   -- pgolab passes every test the suite's table options; this script reads none of them.
   tables = {"unused", 1},
   table_size = {"unused", 10000},
}

local function statements(path)
   local f = assert(io.open(path, "r"), "cannot read --sql-file=" .. path)
   local text = f:read("*a")
   f:close()
   local out, current = {}, {}
   for line in (text .. "\n"):gmatch("([^\n]*)\n") do
      if not line:match("^%s*%-%-") and line:match("%S") then
         current[#current + 1] = line
         if line:match(";%s*$") then
            local sql = table.concat(current, "\n"):gsub(";%s*$", "")
            out[#out + 1] = sql
            current = {}
         end
      end
   end
   if #current > 0 then
      out[#out + 1] = table.concat(current, "\n")
   end
   if #out == 0 then
      error("no statement in --sql-file=" .. path)
   end
   return out
end

function thread_init()
   sqls = statements(sysbench.opt.sql_file)
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

function event()
   for i = 1, #sqls do
      con:query(sqls[i])
   end
end
