def test_todo_is_served(app):
    response = app.get("/v1/todos/1")
    assert response.status_int == 200
    assert response.json == {
        "userId": 1,
        "id": 1,
        "title": "review the cursor #1",
        "completed": False,
    }
