"""SQLAlchemy, the Python ORM most TiDB users have, on PyMySQL against a running sql node:
create_all makes the tables (checking first whether they exist), the ORM creates, reads,
updates and deletes rows, and reflection reads the tables back: columns, primary key,
indexes and unique constraints (SHOW CREATE TABLE, DESCRIBE, information_schema).
"""

import datetime
import decimal
import os
from typing import Optional

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

URL = f"mysql+pymysql://root@127.0.0.1:{os.environ['ATOLL_PORT']}"
# Over TLS when the suite runs against a node that serves only TLS (see test_drivers.py).
CONNECT_ARGS = {"ssl": {"ca": os.environ["ATOLL_TLS_CA"]}} if os.environ.get("ATOLL_TLS_CA") else {}


class Base(DeclarativeBase):
    pass


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(sa.String(50), unique=True)
    balance: Mapped[decimal.Decimal] = mapped_column(sa.Numeric(10, 2), default=0)
    opened: Mapped[datetime.datetime] = mapped_column(sa.DateTime, default=datetime.datetime(2024, 1, 1))
    note: Mapped[Optional[str]] = mapped_column(sa.String(200))
    __table_args__ = (sa.Index("ix_balance", "balance"),)


def test_create_all_crud_and_reflection():
    with sa.create_engine(URL + "/", connect_args=CONNECT_ARGS).connect() as c:
        c.execute(sa.text("DROP DATABASE IF EXISTS orm_sqlalchemy"))
        c.execute(sa.text("CREATE DATABASE orm_sqlalchemy"))
    engine = sa.create_engine(URL + "/orm_sqlalchemy", connect_args=CONNECT_ARGS)
    Base.metadata.create_all(engine)
    Base.metadata.create_all(engine)  # again: it finds the table and leaves it

    with Session(engine) as s:
        s.add_all([Account(name="ann", balance=decimal.Decimal("10.50")), Account(name="bob")])
        s.commit()
        ann = s.scalars(sa.select(Account).where(Account.name == "ann")).one()
        assert (ann.balance, ann.opened) == (decimal.Decimal("10.50"), datetime.datetime(2024, 1, 1))
        ann.balance += 1
        ann.note = "updated"
        s.commit()
        s.refresh(ann)
        assert (ann.balance, ann.note) == (decimal.Decimal("11.50"), "updated")
        s.delete(ann)
        s.commit()
        assert s.scalar(sa.select(sa.func.count()).select_from(Account)) == 1

    inspector = sa.inspect(engine)
    assert inspector.get_table_names() == ["accounts"]
    columns = {c["name"]: c for c in inspector.get_columns("accounts")}
    assert list(columns) == ["id", "name", "balance", "opened", "note"]
    assert columns["id"]["autoincrement"] and not columns["id"]["nullable"]
    assert isinstance(columns["balance"]["type"], sa.DECIMAL) and columns["balance"]["type"].scale == 2
    assert columns["note"]["nullable"] and columns["note"]["type"].length == 200
    assert inspector.get_pk_constraint("accounts")["constrained_columns"] == ["id"]
    indexes = {i["name"]: i for i in inspector.get_indexes("accounts")}
    assert indexes["ix_balance"]["column_names"] == ["balance"] and not indexes["ix_balance"]["unique"]
    assert [u["column_names"] for u in inspector.get_unique_constraints("accounts")] == [["name"]]
    reflected = sa.Table("accounts", sa.MetaData(), autoload_with=engine)
    assert [c.name for c in reflected.c] == ["id", "name", "balance", "opened", "note"]
